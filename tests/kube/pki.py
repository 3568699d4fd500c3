"""The certificates and keys of a test control plane, made at its start (nothing is kept between runs).

```python
pki = Pki.create(tmp_dir / "pki")
pki.client("system:kube-scheduler")   # -> (cert path, key path) of a client certificate signed by the CA
```
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Pki"]

# Long enough for any test session, short enough that a leaked key is worthless soon.
_VALIDITY = datetime.timedelta(days=2)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _write_key(path: Path, key) -> Path:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return path


@dataclass(frozen=True)
class Pki:
    """A CA, the API server's serving certificate and the service-account signing key pair, in ``root``."""

    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.root / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.root / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.root / "sa.key"

    @property
    def service_account_pub(self) -> Path:
        return self.root / "sa.pub"

    @classmethod
    def create(cls, root: Path) -> Pki:
        root.mkdir(parents=True, exist_ok=True)
        pki = cls(root)
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (x509.CertificateBuilder().subject_name(_name("hetero-test-ca")).issuer_name(_name("hetero-test-ca"))
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALIDITY)
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                           content_commitment=False, key_encipherment=False, data_encipherment=False,
                                           key_agreement=False, encipher_only=False, decipher_only=False),
                             critical=True)
              .sign(ca_key, hashes.SHA256()))
        pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        _write_key(pki.ca_key, ca_key)
        # The names a client inside the cluster uses too, so a pod's in-cluster config would verify it.
        names = [x509.DNSName(n) for n in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                           "kubernetes.default.svc.cluster.local")]
        names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", "10.96.0.1")]
        pki._issue(pki.serving_cert, pki.serving_key, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH,
                   names)
        # RSA: every service-account token verifier accepts it (RS256 is the issuer's default).
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write_key(pki.service_account_key, sa_key)
        pki.service_account_pub.write_bytes(sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        return pki

    def client(self, user: str, group: str | None = None) -> tuple[Path, Path]:
        """A client certificate for ``user`` (in ``group``): the API server reads CN as the user, O as the group."""
        stem = user.replace(":", "-")
        cert, key = self.root / f"{stem}.crt", self.root / f"{stem}.key"
        if not cert.exists():
            self._issue(cert, key, _name(user, group), ExtendedKeyUsageOID.CLIENT_AUTH, [])
        return cert, key

    def _issue(self, cert_path: Path, key_path: Path, subject: x509.Name, usage, names: list) -> None:
        ca = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        ca_key = serialization.load_pem_private_key(self.ca_key.read_bytes(), password=None)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert_path.write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
        _write_key(key_path, key)
