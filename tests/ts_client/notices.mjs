// Drives `crow acp` through the TypeScript ACP SDK as a client that opts into notices and compaction
// updates (ACP 1.25), and prints the session updates it saw as JSON. Run by tests/acp/test_ts_client.py:
// CROW_COMMAND is a JSON array (the command line), CROW_CWD the session root, CROW_PROMPTS the prompts.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = JSON.parse(process.env.CROW_COMMAND);
const cwd = process.env.CROW_CWD;
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const seen = {};

const app = acp
  .client({ name: "crow-ts-notices" })
  .onNotification(acp.methods.client.session.update, ({ params }) => updates.push(params.update));

await app.connectWith(stream, async (agent) => {
  await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { session: { notices: {}, compaction: {} } },
  });
  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  seen.stopReasons = [];
  for (const text of JSON.parse(process.env.CROW_PROMPTS)) {
    const reply = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    seen.stopReasons.push(reply.stopReason);
  }
});
child.stdin.end();
seen.updates = updates;
process.stdout.write(JSON.stringify(seen) + "\n");
