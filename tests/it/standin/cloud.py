"""Stand-ins for the cloud endpoints pullcheck asks for registry credentials, on loopback:
AWS IMDS, STS (AssumeRoleWithWebIdentity), EKS Pod Identity's agent, ECR's API
(GetAuthorizationToken, whose SigV4 signature is checked with botocore's own signer), the GKE
metadata server, Entra ID's token endpoint, Azure IMDS and ACR's /oauth2/exchange.

Usage: python cloud.py CONFIG_JSON. Prints the port, serves until stdin closes. GET /_log
answers the requests seen, as JSON lines "METHOD path outcome". With "imds_delay" (seconds per
step: "token", "roles", "keys"), each IMDS answer waits that long first, and GET /_times answers
when each request came and when its client gave up on it (seconds on one monotonic clock, as
JSON lines "METHOD path arrived|dropped SECONDS").
"""

import base64
import hmac
import json
import re
import select
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

CONFIG = json.loads(sys.argv[1])
AWS = CONFIG.get("aws", {})
GOOGLE = CONFIG.get("google", {})
AZURE = CONFIG.get("azure", {})
LOG = []
TIMES = []
LOCK = threading.Lock()

SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$"
)


def issued_keys():
    """The AWS keys this stand-in hands out or knows: access key id -> (secret, token)."""
    return {AWS.get("access_key", ""): (AWS.get("secret_key", ""), AWS.get("session_token"))}


def verify_sigv4(method, path, headers, body):
    """Checks a request's SigV4 signature with botocore's signer; returns (ok, why)."""
    m = SIGV4.match(headers.get("authorization", ""))
    if not m:
        return False, "no SigV4 Authorization header"
    akid, date, region, service, signed, signature = m.groups()
    keys = issued_keys()
    if akid not in keys:
        return False, "unknown access key"
    secret, token = keys[akid]
    if token is not None and headers.get("x-amz-security-token") != token:
        return False, "wrong or missing session token"
    amz_date = headers.get("x-amz-date", "")
    if not amz_date.startswith(date):
        return False, "scope date differs from x-amz-date"
    if region != AWS.get("region", "us-east-1") or service != "ecr":
        return False, "wrong scope"
    names = signed.split(";")
    for required in ("host", "x-amz-date", "x-amz-target"):
        if required not in names:
            return False, "unsigned " + required
    if token is not None and "x-amz-security-token" not in names:
        return False, "unsigned session token"
    request = AWSRequest(
        method=method,
        url="http://" + headers["host"] + path,
        data=body,
        headers={n: headers[n] for n in names if n in headers},
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(akid, secret, token), service, region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, signature):
        return False, "signature mismatch"
    return True, "signature verified by botocore"


def aws_keys_json():
    return json.dumps({
        "Code": "Success",
        "AccessKeyId": AWS["access_key"],
        "SecretAccessKey": AWS["secret_key"],
        "Token": AWS.get("session_token") or "",
        "Expiration": "2099-01-01T00:00:00Z",
    })


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, outcome):
        if outcome == "log":
            return
        with LOCK:
            LOG.append("%s %s %s" % (self.command, self.path, outcome))

    def answer(self, status, body, content_type="application/json", outcome=None):
        self.record(outcome or str(status))
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def headers_lower(self):
        return {k.lower(): v for k, v in self.headers.items()}

    def stamp(self, what):
        with LOCK:
            TIMES.append("%s %s %s %.6f" % (self.command, self.path, what, time.monotonic()))

    def delayed(self, step):
        """Waits the configured delay of an IMDS step; False when the client gave up first (its
        connection closed), which is then stamped as dropped."""
        delay = AWS.get("imds_delay", {}).get(step)
        if delay is None:
            return True
        self.stamp("arrived")
        until = time.monotonic() + delay
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return True
            readable, _, _ = select.select([self.connection], [], [], left)
            if readable and self.connection.recv(1, 2) == b"":  # 2: MSG_PEEK
                self.stamp("dropped")
                self.record("dropped")
                self.close_connection = True
                return False

    def hang(self):
        self.record("hang")
        time.sleep(5)
        self.close_connection = True

    def do_PUT(self):
        self.body()
        if self.path == "/latest/api/token":
            mode = AWS.get("imds")
            if mode in ("hop-limit", "hop-limit-v1"):
                return self.hang()
            if mode == "v2":
                if not self.headers.get("x-aws-ec2-metadata-token-ttl-seconds"):
                    return self.answer(400, "missing ttl")
                if not self.delayed("token"):
                    return None
                return self.answer(200, "imds-session-token", "text/plain")
        self.answer(404, "{}")

    def do_GET(self):
        h = self.headers_lower()
        path = self.path
        if path == "/_log":
            with LOCK:
                seen = json.dumps(LOG)
            return self.answer(200, seen, outcome="log")
        if path == "/_times":
            with LOCK:
                seen = json.dumps(TIMES)
            return self.answer(200, seen, outcome="log")
        if path.startswith("/latest/meta-data/iam/security-credentials/") and "imds" in AWS:
            mode = AWS["imds"]
            token_ok = h.get("x-aws-ec2-metadata-token") == "imds-session-token"
            v1_ok = mode == "hop-limit-v1"
            if not (token_ok or v1_ok):
                return self.answer(401, "", "text/plain")
            role = AWS.get("imds_role", "node-role")
            rest = path[len("/latest/meta-data/iam/security-credentials/"):]
            if rest == "":
                if not self.delayed("roles"):
                    return None
                return self.answer(200, role + "\n", "text/plain")
            if rest == role:
                if not self.delayed("keys"):
                    return None
                return self.answer(200, aws_keys_json())
            return self.answer(404, "{}")
        if path == "/pod-identity" and "pod_identity_token" in AWS:
            if h.get("authorization") != AWS["pod_identity_token"]:
                return self.answer(401, '{"Message": "bad token"}')
            return self.answer(200, aws_keys_json())
        if path == "/computeMetadata/v1/instance/service-accounts/default/token" and GOOGLE:
            if h.get("metadata-flavor") != "Google":
                return self.answer(403, "missing Metadata-Flavor")
            return self.answer(200, json.dumps({
                "access_token": GOOGLE["token"], "expires_in": 3599, "token_type": "Bearer"}))
        if path.startswith("/metadata/identity/oauth2/token") and AZURE.get("imds"):
            q = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)
            if h.get("metadata") != "true" or q.get("resource") != ["https://management.azure.com/"]:
                return self.answer(400, '{"error": "invalid_request"}')
            return self.answer(200, json.dumps({"access_token": AZURE["access_token"]}))
        self.answer(404, "{}")

    def do_POST(self):
        h = self.headers_lower()
        raw = self.body()
        path = self.path
        if path == "/sts/":
            form = urllib.parse.parse_qs(raw.decode())
            ok = (
                form.get("Action") == ["AssumeRoleWithWebIdentity"]
                and form.get("Version") == ["2011-06-15"]
                and form.get("RoleArn") == [AWS.get("role_arn")]
                and form.get("WebIdentityToken") == [AWS.get("web_identity_token")]
                and form.get("RoleSessionName", [""])[0] != ""
            )
            if not ok:
                return self.answer(403, "<ErrorResponse><Error><Code>AccessDenied</Code>"
                                   "<Message>Not authorized to perform sts:AssumeRoleWithWebIdentity"
                                   "</Message></Error></ErrorResponse>", "text/xml")
            xml = ("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
                   "<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>"
                   "<SessionToken>%s</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>"
                   "</Credentials></AssumeRoleWithWebIdentityResult>"
                   "</AssumeRoleWithWebIdentityResponse>") % (
                       AWS["access_key"], AWS["secret_key"], AWS.get("session_token") or "")
            return self.answer(200, xml, "text/xml")
        if path == "/ecr/":
            if h.get("x-amz-target") != "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken":
                return self.answer(400, '{"__type": "UnknownOperationException"}')
            ok, why = verify_sigv4("POST", path, h, raw)
            if not ok:
                return self.answer(403, json.dumps({
                    "__type": "InvalidSignatureException", "message": why}), outcome="403 " + why)
            if AWS.get("ecr_deny"):
                return self.answer(400, json.dumps({
                    "__type": "AccessDeniedException",
                    "message": "not authorized to perform: ecr:GetAuthorizationToken"}))
            token = base64.b64encode(("AWS:" + AWS["ecr_token"]).encode()).decode()
            return self.answer(200, json.dumps({"authorizationData": [{
                "authorizationToken": token, "expiresAt": 4102444800,
                "proxyEndpoint": "https://example"}]}), outcome="200 " + why)
        m = re.match(r"^/([^/]+)/oauth2/v2\.0/token$", path)
        if m and AZURE:
            form = urllib.parse.parse_qs(raw.decode())
            ok = (
                m.group(1) == AZURE.get("tenant")
                and form.get("grant_type") == ["client_credentials"]
                and form.get("client_id") == [AZURE.get("client_id")]
                and form.get("client_assertion") == [AZURE.get("federated_token")]
                and form.get("client_assertion_type") == [
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"]
                and form.get("scope") == ["https://management.azure.com/.default"]
            )
            if not ok:
                return self.answer(401, json.dumps({
                    "error": "invalid_client", "error_description": "AADSTS700213: no match"}))
            return self.answer(200, json.dumps({
                "access_token": AZURE["access_token"], "token_type": "Bearer"}))
        if path == "/oauth2/exchange" and AZURE:
            form = urllib.parse.parse_qs(raw.decode())
            ok = (
                form.get("grant_type") == ["access_token"]
                and form.get("access_token") == [AZURE["access_token"]]
                and form.get("service") == [AZURE.get("registry")]
            )
            if not ok:
                return self.answer(401, json.dumps({"error": "unauthorized"}))
            return self.answer(200, json.dumps({"refresh_token": AZURE["refresh_token"]}))
        self.answer(404, "{}")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


main()
