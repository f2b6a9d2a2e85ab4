"""The few S3 calls the worker and the local stack make without a JVM: make a bucket, list, read and delete the
objects under a prefix (a checkpoint's reset and deletion, its offset log for the lag). Requests are signed with
AWS Signature Version 4 (standard library only); the keys come from the environment (`spark_jobs.object_store`).

Spark's own S3A file system does everything a job does; this only reaches what the worker needs between jobs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from spark_jobs import object_store

TIMEOUT = 10.0
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class S3Error(RuntimeError):
    """An S3 request was refused or could not be made; `code` is S3's error code (AccessDenied, NoSuchBucket...)
    or "unreachable"."""

    def __init__(self, message: str, *, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass(frozen=True)
class S3Client:
    endpoint: str  # http(s)://host:port of an S3-compatible server, or "" for AWS (the region's endpoint)
    region: str
    access_key: str
    secret_key: str
    session_token: str = ""
    path_style: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Client:
        env = env if env is not None else os.environ
        conf = object_store.hadoop_conf(env)
        return cls(
            endpoint=object_store.endpoint(env),
            region=conf.get("fs.s3a.endpoint.region", "us-east-1"),
            access_key=env.get("AWS_ACCESS_KEY_ID", ""),
            secret_key=env.get("AWS_SECRET_ACCESS_KEY", ""),
            session_token=env.get("AWS_SESSION_TOKEN", ""),
            path_style=conf["fs.s3a.path.style.access"] == "true",
        )

    def _url(self, bucket: str, key: str, query: Mapping[str, str]) -> tuple[str, str, str]:
        """(url, host, canonical path) of a request."""
        base = self.endpoint or f"https://s3.{self.region}.amazonaws.com"
        parts = urllib.parse.urlsplit(base)
        quoted_key = urllib.parse.quote(key, safe="/~")
        if self.path_style or (not self.endpoint and "." in bucket):
            host, path = parts.netloc, f"/{bucket}/{quoted_key}" if key else f"/{bucket}"
        else:
            host, path = f"{bucket}.{parts.netloc}", f"/{quoted_key}"
        encoded = "&".join(
            f"{urllib.parse.quote(k, safe='~')}={urllib.parse.quote(v, safe='~')}" for k, v in sorted(query.items())
        )
        return f"{parts.scheme}://{host}{path}{'?' + encoded if encoded else ''}", host, path

    def request(
        self, method: str, bucket: str, key: str = "", *, query: Mapping[str, str] | None = None, body: bytes = b""
    ) -> bytes:
        query = dict(query or {})
        url, host, path = self._url(bucket, key, query)
        now = dt.datetime.now(dt.UTC)
        stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(body).hexdigest()
        headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": stamp}
        if self.session_token:
            headers["x-amz-security-token"] = self.session_token
        if method == "POST":
            headers["content-md5"] = _content_md5(body)
        signed = ";".join(sorted(headers))
        canonical_query = url.partition("?")[2]
        canonical = "\n".join(
            [method, path, canonical_query, *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, payload]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key_bytes = ("AWS4" + self.secret_key).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            key_bytes = hmac.new(key_bytes, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key_bytes, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
        )
        del headers["host"]
        # The endpoint is the operator's setting, http(s) only (an s3a:// location never names a scheme here).
        http_request = urllib.request.Request(url, data=body or None, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(http_request, timeout=TIMEOUT) as answer:  # noqa: S310
                return answer.read()
        except urllib.error.HTTPError as exc:
            code = _error_code(exc.read())
            where = f"s3a://{bucket}/{key}" if key else f"bucket {bucket}"
            raise S3Error(f"S3 answered {exc.code} {code} for {where}", code=code, status=exc.code) from None
        except OSError as exc:
            raise S3Error(f"S3 at {self.endpoint or 'AWS'} cannot be reached: {exc}", code="unreachable") from None

    def make_bucket(self, bucket: str) -> None:
        """Create `bucket`; nothing when this account has it already."""
        try:
            self.request("PUT", bucket)
        except S3Error as exc:
            if exc.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise

    def keys(self, bucket: str, prefix: str) -> Iterator[str]:
        token = ""
        while True:
            query = {"list-type": "2", "prefix": prefix, **({"continuation-token": token} if token else {})}
            # The configured store's answer; expat expands no external entities.
            root = ET.fromstring(self.request("GET", bucket, query=query))  # noqa: S314
            for item in root.iter(f"{S3_NS}Contents"):
                yield item.findtext(f"{S3_NS}Key") or ""
            token = root.findtext(f"{S3_NS}NextContinuationToken") or ""
            if root.findtext(f"{S3_NS}IsTruncated") != "true" or not token:
                return

    def read(self, bucket: str, key: str) -> bytes:
        return self.request("GET", bucket, key)

    def delete_prefix(self, bucket: str, prefix: str) -> int:
        """Delete every object under `prefix`, up to 1,000 a request; how many there were."""
        keys = list(self.keys(bucket, prefix))
        for start in range(0, len(keys), 1000):
            objects = "".join(f"<Object><Key>{_xml(key)}</Key></Object>" for key in keys[start : start + 1000])
            body = f"<Delete><Quiet>true</Quiet>{objects}</Delete>".encode()
            self.request("POST", bucket, query={"delete": ""}, body=body)
        return len(keys)


def _content_md5(body: bytes) -> str:
    import base64

    return base64.b64encode(hashlib.md5(body).digest()).decode()  # noqa: S324 (S3 asks for MD5 here)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _error_code(body: bytes) -> str:
    try:
        return ET.fromstring(body).findtext("Code") or "error"  # noqa: S314 (as in `keys`)
    except ET.ParseError:
        return "error"


__all__ = ["S3Client", "S3Error"]
