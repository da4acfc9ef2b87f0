"""Running toolmesh on Kubernetes.

This folder is two things at once. Its YAML is a kustomize tree (`base/`,
`overlays/dev`, `overlays/prod`, `components/kube-scaler`) applied with
``kubectl apply -k``. Its Python is the `toolmesh.deploy` package, whose
`render` writes the same manifests for the runtimes of any ``toolmesh.toml``
(``toolmesh deploy render``), reading those YAML files as its templates, so the
hand-kept reference and the generated manifests cannot drift apart.
"""
