// Drives `crow acp` through the TypeScript ACP SDK (what editors embed) and prints what it saw as JSON.
// Run by tests/acp/test_ts_client.py: CROW_COMMAND is a JSON array (the command line), CROW_CWD the session root.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = JSON.parse(process.env.CROW_COMMAND);
const cwd = process.env.CROW_CWD;
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const seen = {};

const options = (list) =>
  Object.fromEntries((list ?? []).map((o) => [o.id, { category: o.category, current: o.currentValue, values: (o.options ?? []).map((v) => v.value) }]));

async function failure(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error.code ?? String(error);
  }
}

// --- Elicitation (issue 20 item 2) -------------------------------------------------------------------------
// With CROW_ELICIT_SERVER (an MCP server entry, JSON) the client opts into form elicitation, answers every
// `elicitation/create` with CROW_ELICIT_ANSWER (JSON), and at the end prompts in a session with that server.
const elicitServer = process.env.CROW_ELICIT_SERVER ? JSON.parse(process.env.CROW_ELICIT_SERVER) : null;
const elicitationCapabilities = elicitServer ? { elicitation: { form: {} } } : {};
const elicited = [];
const answerElicitation = ({ params }) => {
  elicited.push(params);
  return JSON.parse(process.env.CROW_ELICIT_ANSWER);
};
async function elicitationSteps(agent) {
  if (!elicitServer) return;
  step("elicitation");
  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [elicitServer] });
  const reply = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "book" }] });
  seen.elicitation = { stopReason: reply.stopReason, asked: elicited, sessionId };
}
// --- end of elicitation ----------------------------------------------------------------------------------

const app = acp
  .client({ name: "crow-ts-test" })
  .onRequest(acp.methods.client.elicitation.create, answerElicitation)
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
    outcome: { outcome: "selected", optionId: params.options[0].optionId },
  }))
  .onNotification(acp.methods.client.session.update, ({ params }) => updates.push(params.update));

const step = (name) => process.stderr.write(`ts-client: ${name}\n`);
await app.connectWith(stream, async (agent) => {
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { ...elicitationCapabilities },
  });
  seen.capabilities = init.agentCapabilities;

  step("new");
  const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const sessionId = created.sessionId;
  seen.created = { options: options(created.configOptions), modes: created.modes };

  const set = (configId, value) => agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId, value });
  step("thought");
  seen.thought = options((await set("thought_level", "high")).configOptions);
  step("plan");
  seen.plan = options((await set("mode", "plan")).configOptions);
  step("setMode");
  await agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "accept_edits" });
  seen.badThought = await failure(set("thought_level", "extreme"));
  seen.badMode = await failure(set("mode", "yolo"));

  step("prompt");
  const reply = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hello" }] });
  seen.stopReason = reply.stopReason;
  step("plain");
  seen.plain = options((await set("model", "plain")).configOptions);

  step("fork");
  // session/fork is unstable in the spec, so the stable entry point has no name for it.
  const fork = await agent.request("session/fork", { sessionId, cwd, mcpServers: [] });
  seen.fork = { different: fork.sessionId !== sessionId, options: options(fork.configOptions) };
  step("list");
  const listed = await agent.request(acp.methods.agent.session.list, { cwd });
  seen.listed = listed.sessions.length;
  await elicitationSteps(agent);
});
child.stdin.end();
seen.updates = updates;
process.stdout.write(JSON.stringify(seen) + "\n");
