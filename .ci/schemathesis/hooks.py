"""Schemathesis hooks for Bowline: every generated request carries a fresh user's session.

The provider signs up a new user (sign-up also creates the user's default calendar) and
creates a second calendar, then hands out the session token as the bearer. It refreshes
every few seconds, so an operation that ends its session (sign-out, revoke, delete-user)
leaves the following ones a live session again soon.
"""

import os
import uuid

import requests
import schemathesis
from hypothesis.internal import lambda_sources

# Hypothesis names the lambdas of a strategy in its description by parsing their module's
# source with `ast`; deep inside the recursive strategies of the Page config's schema,
# CPython 3.11's parser then fails ("AST constructor recursion depth mismatch"), and
# Hypothesis reports the operation as flaky. The description only names strategies in
# messages, so the lambda's own name will do.
lambda_sources.lambda_description = lambda f: getattr(f, "__qualname__", "lambda")

BASE_URL = os.environ["BOWLINE_URL"]
PASSWORD = "correct horse battery staple"


@schemathesis.auth(refresh_interval=5)
class BowlineSession:
    """A signed-up user's bearer token, with a calendar of their own."""

    def get(self, case, context):
        email = f"fuzz-{uuid.uuid4().hex[:12]}@example.com"
        response = requests.post(
            f"{BASE_URL}/api/auth/sign-up/email",
            json={"email": email, "password": PASSWORD, "name": "Fuzz User"},
            timeout=30,
        )
        response.raise_for_status()
        token = response.json()["token"]
        created = requests.post(
            f"{BASE_URL}/api/v1/calendars",
            json={"id": str(uuid.uuid4()), "name": "Fuzzed", "color": "#3366ff"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        created.raise_for_status()
        return token

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"
