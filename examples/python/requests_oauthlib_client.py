#!/usr/bin/python3
"""A Horizon ID client in Python with requests-oauthlib (Debian: python3-requests-oauthlib).

Two steps, as a web application would take them:

  authorize  prints the URL to send the user to, and the state to keep for the callback:
             {"url": "...", "state": "..."}
  exchange   given the URL the user came back to, checks the state, exchanges the code at
             /login/oauth/access_token and lists the user's groups from /apis/v2/groups:
             {"token": {...}, "groups": {...}}

  ./requests_oauthlib_client.py authorize --idp http://localhost:3000 --client-id ID \
      --redirect-uri http://localhost:4000/callback
  ./requests_oauthlib_client.py exchange --idp http://localhost:3000 --client-id ID \
      --client-secret hs_... --redirect-uri http://localhost:4000/callback \
      --state STATE --callback-url 'http://localhost:4000/callback?code=...&state=...'
"""
import argparse
import json
import os
import sys
from urllib.parse import urlsplit

from requests_oauthlib import OAuth2Session

SCOPE = ["groups:read-only"]


def allow_http_on_loopback(url):
    # oauthlib refuses plain http; a provider on this machine (http://localhost:3000) is allowed,
    # and only that one.
    if urlsplit(url).hostname in ("localhost", "127.0.0.1", "::1"):
        os.environ["OAUTHLIB_INSECURE_TRANSPORT"] = "1"


def authorize(args):
    session = OAuth2Session(args.client_id, redirect_uri=args.redirect_uri, scope=SCOPE)
    url, state = session.authorization_url(f"{args.idp}/login/oauth/authorize")
    return {"url": url, "state": state}


def exchange(args):
    session = OAuth2Session(args.client_id, redirect_uri=args.redirect_uri, scope=SCOPE, state=args.state)
    # The state of the callback must equal the one kept at `authorize`: fetch_token checks it.
    # include_client_id=True sends client_id and client_secret as parameters, as the seed does.
    token = session.fetch_token(
        f"{args.idp}/login/oauth/access_token",
        authorization_response=args.callback_url,
        client_secret=args.client_secret,
        include_client_id=True,
    )
    response = session.get(f"{args.idp}/apis/v2/groups", params={"pageSize": 50})
    response.raise_for_status()
    return {"token": dict(token), "groups": response.json()}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    for name in ("authorize", "exchange"):
        step = steps.add_parser(name)
        step.add_argument("--idp", required=True, help="the provider's base URL, e.g. http://localhost:3000")
        step.add_argument("--client-id", required=True)
        step.add_argument("--redirect-uri", required=True)
        if name == "exchange":
            step.add_argument("--client-secret", required=True)
            step.add_argument("--state", required=True)
            step.add_argument("--callback-url", required=True)
    args = parser.parse_args(argv)
    args.idp = args.idp.rstrip("/")
    allow_http_on_loopback(args.idp)
    result = authorize(args) if args.step == "authorize" else exchange(args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
