// Validates messages crow sends against the zod schemas generated from the ACP schema
// (@agentclientprotocol/sdk 2.4.0, v1 unstable: the newest shapes, stable ones included).
// Reads JSON lines {"schema": "zSessionNotification", "value": {...}} on stdin and prints one
// JSON line per input: {"ok": true} or {"ok": false, "problems": [...]}. Run by tests/zod_check.py.
//
// zod strips unknown keys and some fields fall back to a default on a bad value, so a parse that
// "succeeds" can still hide a misnamed field: every key the parse dropped or changed is a problem.
import { createInterface } from "node:readline";
import * as schemas from "./node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js";

function differences(input, output, path, problems) {
  if (Array.isArray(input)) {
    input.forEach((item, i) => differences(item, output?.[i], `${path}[${i}]`, problems));
  } else if (input !== null && typeof input === "object") {
    for (const [key, value] of Object.entries(input)) {
      if (output === null || typeof output !== "object" || !(key in output)) {
        problems.push(`${path}.${key}: not in the schema`);
      } else {
        differences(value, output[key], `${path}.${key}`, problems);
      }
    }
  } else if (input !== output) {
    problems.push(`${path}: ${JSON.stringify(input)} is not valid (read as ${JSON.stringify(output)})`);
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { schema, value } = JSON.parse(line);
  const zod = schemas[schema];
  if (!zod) {
    console.log(JSON.stringify({ ok: false, problems: [`no schema named ${schema}`] }));
    continue;
  }
  const parsed = zod.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `$.${i.path.join(".")}: ${i.message}`);
    console.log(JSON.stringify({ ok: false, problems }));
    continue;
  }
  const problems = [];
  differences(value, parsed.data, "$", problems);
  console.log(JSON.stringify({ ok: problems.length === 0, problems }));
}
