"""What each runtime of a config brings, found without serving anything (`toolmesh functions
--config`): see runtime_listing.py."""
