"""``s3://`` model paths through AWS's own SDK (``boto3``, the ``flask-predict[s3]``
extra), for AWS or any S3-compatible store. Credentials come from boto3's standard chain (the
``AWS_*`` environment, the shared profile, web identity, the instance or task role);
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) names an S3-compatible endpoint."""

from __future__ import annotations

from typing import IO, Any, BinaryIO

from .store import (CONNECT_SECONDS, READ_SECONDS, TRIES, StorageError, StoredObject,
                    folder_names)
from .uri import RemoteUri

NOT_MD5 = ("aws:kms", "aws:kms:dsse")
"""Server-side encryptions whose ETag is not the content's MD5 digest."""


class S3Store:
    """The objects under one ``s3://`` prefix."""

    def __init__(self, uri: RemoteUri) -> None:
        self.uri = uri
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise StorageError(f"{uri}: s3:// model paths need boto3: "
                               "pip install 'flask-predict[s3]'") from None
        config = Config(connect_timeout=CONNECT_SECONDS, read_timeout=READ_SECONDS,
                        retries={"total_max_attempts": TRIES, "mode": "standard"})
        try:
            self._client: Any = boto3.session.Session().client("s3", config=config)
        except Exception as exc:
            raise StorageError(f"{uri}: {_cause(exc)}") from None

    def folders(self) -> list[str]:
        prefix = self.uri.key("")
        found = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.uri.bucket, Prefix=prefix, Delimiter="/")
            for page in pages:
                found += [str(entry["Prefix"]) for entry in page.get("CommonPrefixes", ())]
        except Exception as exc:
            raise StorageError(f"{self.uri}: cannot list: {_cause(exc)}") from None
        return folder_names(found, prefix)

    def list(self) -> list[StoredObject]:
        prefix = self.uri.key("")
        found = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.uri.bucket, Prefix=prefix)
            for page in pages:
                for entry in page.get("Contents", ()):
                    name = str(entry["Key"])[len(prefix):]
                    if name and not name.endswith("/"):
                        tag = str(entry["ETag"]).strip('"')
                        found.append(StoredObject(name, int(entry["Size"]), tag, _md5(tag)))
        except Exception as exc:
            raise StorageError(f"{self.uri}: cannot list: {_cause(exc)}") from None
        return found

    def download(self, item: StoredObject, into: BinaryIO) -> bool:
        """Download *item* as listed (``IfMatch`` its ETag). Its ETag is its MD5 digest
        unless it is encrypted with KMS or a customer's key."""
        try:
            answer = self._client.get_object(Bucket=self.uri.bucket,
                                             Key=self.uri.key(item.name), IfMatch=item.tag)
            for chunk in answer["Body"].iter_chunks(1 << 20):
                into.write(chunk)
        except Exception as exc:
            raise StorageError(f"{self.uri}/{item.name}: cannot read: {_cause(exc)}") from None
        return not (answer.get("ServerSideEncryption") in NOT_MD5
                    or answer.get("SSECustomerAlgorithm"))

    def upload(self, name: str, source: IO[bytes]) -> None:
        """One PUT, or a multipart upload past 8 MiB, which S3 completes (the object
        appearing) only once every part is in."""
        try:
            self._client.upload_fileobj(source, self.uri.bucket, self.uri.key(name))
        except Exception as exc:
            raise StorageError(f"{self.uri}/{name}: cannot write: {_cause(exc)}") from None


def _md5(tag: str) -> bytes | None:
    """The MD5 digest an ETag gives: a single-part upload's (32 hex digits; a multipart
    upload's ends in ``-N``)."""
    if len(tag) == 32 and all(c in "0123456789abcdef" for c in tag.lower()):
        return bytes.fromhex(tag)
    return None


def _cause(exc: Exception) -> str:
    """A short cause that quotes no credential: the error code and HTTP status the store
    answered, or the kind of failure."""
    kind = type(exc).__name__
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        code = error.get("Code", "")
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("NoSuchBucket", "NoSuchKey", "404"):
            return f"bucket or object not found ({code})"
        if status in (401, 403):
            return f"access denied ({code or status}): check the credentials and the policy"
        if code == "PreconditionFailed":
            return "the object changed while it was read (PreconditionFailed)"
        return f"HTTP {status} ({code or kind})"
    if kind in ("NoCredentialsError", "PartialCredentialsError"):
        return "no AWS credentials found (environment, profile, web identity or role)"
    return f"the store is unreachable ({kind})"
