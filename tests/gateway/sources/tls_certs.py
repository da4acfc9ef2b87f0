"""Certificates made for a test (the `cryptography` package): a CA, a server certificate for
127.0.0.1 and "pets.test" signed by it, and a client certificate for mutual TLS."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: The name the server's certificate carries besides 127.0.0.1.
SERVER_NAME = "pets.test"


@dataclass(frozen=True)
class Certificates:
    """The PEM files, in one directory."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _builder(subject: str, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def make_certificates(directory: Path, prefix: str = "") -> Certificates:
    """A fresh CA and the certificates it signs, written to `directory` (file names `prefix`ed)."""
    ca_key = _key()
    ca_cert = (
        _builder(f"{prefix}toolmesh test CA", _name(f"{prefix}toolmesh test CA"), ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(
        common: str, usage: x509.ObjectIdentifier, names: list[x509.GeneralName]
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = _key()
        builder = _builder(common, ca_cert.subject, key).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server, server_key = leaf(
        SERVER_NAME,
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client, client_key = leaf("toolmesh gateway", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    return Certificates(
        ca=_write_cert(ca_cert, directory / f"{prefix}ca.pem"),
        server_cert=_write_cert(server, directory / f"{prefix}server.pem"),
        server_key=_write_key(server_key, directory / f"{prefix}server.key"),
        client_cert=_write_cert(client, directory / f"{prefix}client.pem"),
        client_key=_write_key(client_key, directory / f"{prefix}client.key"),
    )
