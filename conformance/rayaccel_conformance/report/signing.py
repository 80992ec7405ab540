"""Ed25519 keys and DSSE envelopes: what makes a conformance report an attestation nobody can forge.

A signature is over the DSSE pre-authentication encoding (PAE) of the payload, as the DSSE v1 spec
(github.com/secure-systems-lab/dsse, ``protocol.md``) defines it::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

with LEN the byte length in ASCII decimal. Keys are PEM files (PKCS#8 private key, SubjectPublicKeyInfo
public key) made by :func:`write_keypair`; a key's id is the sha256 of its raw 32-byte public key.
The cryptography is the ``cryptography`` package's; nothing here computes a signature itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field

from rayaccel.errors import RayaccelError
from rayaccel.files.atomic import write_atomically
from rayaccel.support.safe_text import terminal_text

#: The DSSE payload type of an in-toto Statement.
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: A key file is a few hundred bytes; anything much larger is not a key.
MAX_KEY_BYTES = 64 * 1024


class SigningError(RayaccelError):
    """A key that cannot be read, written or used, or a signature that does not verify."""


# Envelope --------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Signature(_Model):
    keyid: str = Field(description="sha256 (hex) of the raw ed25519 public key that signed")
    sig: str = Field(min_length=1, description="Base64 of the ed25519 signature over PAE(payloadType, payload)")


class Envelope(_Model):
    """A DSSE envelope (field names as the DSSE spec spells them)."""

    payload: str = Field(description="Base64 of the serialized in-toto Statement")
    payloadType: str  # the DSSE wire name
    signatures: list[Signature]


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what is signed, so the type cannot be swapped under a signature."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def sign(body: bytes, key: Ed25519PrivateKey, payload_type: str = INTOTO_PAYLOAD_TYPE) -> Envelope:
    signature = key.sign(pae(payload_type, body))
    return Envelope(payload=base64.b64encode(body).decode("ascii"), payloadType=payload_type,
                    signatures=[Signature(keyid=key_id(key.public_key()),
                                          sig=base64.b64encode(signature).decode("ascii"))])


def _b64(text: str, what: str) -> bytes:
    try:  # DSSE allows standard or URL-safe base64
        return base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise SigningError(f"the envelope's {what} is not base64") from None


def open_envelope(envelope: Envelope, key: Ed25519PublicKey) -> bytes:
    """The payload, once a signature by ``key`` verifies over its PAE; :class:`SigningError` otherwise."""
    if not envelope.signatures:
        raise SigningError("the envelope carries no signature")
    wanted = key_id(key)
    mine = [s for s in envelope.signatures if s.keyid == wanted]
    if not mine:
        others = ", ".join(terminal_text(s.keyid)[:80] for s in envelope.signatures)  # the report's text: data
        raise SigningError(f"signed by key {others}, not by the key given ({wanted})")
    body = _b64(envelope.payload, "payload")
    message = pae(envelope.payloadType, body)
    for signature in mine:
        try:
            key.verify(_b64(signature.sig, "signature"), message)
            return body
        except InvalidSignature:
            continue
    raise SigningError(f"the signature does not verify with key {wanted}: the attestation was changed after "
                       "signing, or signed with another key under this key's id")


# Keys ------------------------------------------------------------------------------------------


def key_id(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _read_key_file(path: Path, what: str) -> bytes:
    from rayaccel.files.reading import read_text

    # Regular files only, size-bounded, UTF-8 (PEM is ASCII): a FIFO or a huge file is one line, not a hang.
    return read_text(path, what, SigningError, max_bytes=MAX_KEY_BYTES).encode("utf-8")


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """The ed25519 private key in a PEM file; one-sentence :class:`SigningError` for anything else."""
    path = Path(path)
    data = _read_key_file(path, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise SigningError(f"{path}: the private key is encrypted; sign with the unencrypted key "
                           "`rayaccel certify keygen` writes (keep it in a secret store instead)") from None
    except (ValueError, UnsupportedAlgorithm):
        hint = " (that is a public key: sign with the private one)" if b"PUBLIC KEY" in data else ""
        raise SigningError(f"{path}: not a PEM private key{hint}; make one with `rayaccel certify keygen`") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path}: a {type(key).__name__.removeprefix('_')} is not an ed25519 key; make one with "
                           "`rayaccel certify keygen`")
    return key


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    """The ed25519 public key in a PEM file; one-sentence :class:`SigningError` for anything else."""
    path = Path(path)
    data = _read_key_file(path, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        hint = " (that is a private key: verify with the .pub file beside it)" if b"PRIVATE KEY" in data else ""
        raise SigningError(f"{path}: not a PEM public key{hint}; pass the .pub file `rayaccel certify keygen` "
                           "wrote") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningError(f"{path}: a {type(key).__name__.removeprefix('_')} is not an ed25519 key; verify with "
                           "the .pub file `rayaccel certify keygen` wrote")
    return key


def write_keypair(private_path: str | Path) -> tuple[Path, Path, str]:
    """A new ed25519 key pair: ``private_path`` (mode 0600) and ``private_path.pub``; returns both and the id.

    Refuses to overwrite either file: a key that signed reports must not be lost by a second keygen.
    """
    private = Path(private_path)
    public = private.with_name(private.name + ".pub")
    existing = [p for p in (private, public) if p.exists() or p.is_symlink()]
    if existing:
        raise SigningError(f"{existing[0]} exists: refusing to overwrite a key (reports signed with it would no "
                           "longer verify); choose another path or remove it first")
    if not private.parent.is_dir():
        raise SigningError(f"cannot write {private}: directory {private.parent} does not exist")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        write_atomically(private, pem, 0o600, overwrite=False)
        try:
            write_atomically(public, pub, 0o644, overwrite=False)
        except BaseException:
            private.unlink()  # no private key without its public half
            raise
    except FileExistsError as e:
        raise SigningError(f"{e.filename or private} appeared while writing: refusing to overwrite a key") from None
    except OSError as e:
        raise SigningError(f"cannot write {private}: {e.strerror or e}") from None
    return private, public, key_id(key.public_key())
