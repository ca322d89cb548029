"""util/secrets.hide_url_password: every message that shows a URL shows it without its password (issue 27)."""

from __future__ import annotations

import pytest

from crow_acp.util.secrets import hide_url_password


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://crow:s3cret@db:5432/crow", "postgresql://crow:***@db:5432/crow"),
        ("postgresql://:s3cret@db/crow", "postgresql://:***@db/crow"),
        ("postgresql://crow@db/crow", "postgresql://crow@db/crow"),
        ("postgresql://crow:p%40ss@db/crow?sslmode=require", "postgresql://crow:***@db/crow?sslmode=require"),
        ("postgresql://crow:s3cret@db:notaport/crow", "postgresql://crow:***@db:notaport/crow"),
        ("not a url", "not a url"),
    ],
)
def test_the_password_is_hidden_and_the_rest_kept(url, shown):
    assert hide_url_password(url) == shown


def test_every_url_in_a_message_is_hidden():
    message = "cannot reach postgresql://crow:s3cret@db/crow (then tried postgres://a:b%2Fc@other/x)"
    assert (
        hide_url_password(message) == "cannot reach postgresql://crow:***@db/crow (then tried postgres://a:***@other/x)"
    )
