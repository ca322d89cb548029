"""crow loads acp.schema without pydantic extracting its field docstrings (crow_acp/acp/rpc/schema.py), and
only for that import: the schema still validates, and models defined afterwards keep their docstrings."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = '''
import json
from pydantic import BaseModel, ConfigDict
from crow_acp.acp.rpc.schema import import_schema

import_schema()
import acp.schema


class Arguments(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)
    path: str
    """The file to read."""


block = acp.schema.TextContentBlock(type="text", text="hi")
print(json.dumps({
    "acp_description": acp.schema.AcceptElicitationResponse.model_fields["content"].description,
    "later_description": Arguments.model_fields["path"].description,
    "block": block.model_dump(exclude_none=True),
}))
'''


def test_acp_models_load_without_docstrings_and_later_models_keep_theirs(tmp_path):
    probe = tmp_path / "probe.py"  # a file: pydantic reads a model's docstrings from its source
    probe.write_text(PROBE)
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["acp_description"] is None, "acp.schema's docstrings were extracted at import"
    assert seen["later_description"] == "The file to read."
    assert seen["block"] == {"type": "text", "text": "hi"}
