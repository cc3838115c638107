// Drives the official A2A JavaScript SDK (@a2a-js/sdk 1.3.0) client against a card URL, for the
// gateway's interop tests. Only the SDK's public client API is used.
//
//   node client.mjs BASE jsonrpc|rest SKILL
//
// BASE is what ClientFactory.createFromUrl gets (the gateway's root or /agents/{name}). Flows: card
// (client.getAgentCard()), send (blocking SendMessage), stream, get. One JSON line per flow on
// stdout: {"flow", "ok", "detail"}; exit status 0 only when every flow is ok.
import { randomUUID } from 'node:crypto';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';

const [base, binding, skill] = process.argv.slice(2);
const transports = { jsonrpc: new JsonRpcTransportFactory(), rest: new RestTransportFactory() };
const factory = new ClientFactory({ transports: [transports[binding]] });

function message(text) {
  return {
    messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: { skillId: skill }, extensions: [], referenceTaskIds: [],
  };
}

const request = (text) => ({ tenant: '', message: message(text), configuration: undefined, metadata: undefined });
const artifactText = (task) => (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => p.content?.value).join('');

async function flow(name, body) {
  const detail = { binding };
  let ok = false;
  try {
    await body(detail);
    ok = true;
  } catch (e) {
    detail.error = `${e?.constructor?.name}: ${e?.message ?? e}`;
  }
  console.log(JSON.stringify({ flow: name, ok, detail }));
  return ok;
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}

const client = await factory.createFromUrl(base);
const results = [];
results.push(await flow('card', async (d) => {
  const card = await client.getAgentCard();
  d.name = card.name;
  d.interfaces = card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.url}`);
  check(card.supportedInterfaces.some((i) => i.url.replace(/\/$/, '') === base.replace(/\/$/, '')), `no interface at ${base}`);
}));
let sent;
results.push(await flow('send', async (d) => {
  const text = `hello from the js sdk ${randomUUID().slice(0, 8)}`;
  const result = await client.sendMessage(request(text));
  const task = result.payload?.$case === 'task' ? result.payload.value : result.kind === 'task' ? result : result;
  d.state = task.status?.state;
  check(task.status?.state === TaskState.TASK_STATE_COMPLETED, `state ${task.status?.state}`);
  check(artifactText(task).includes(text), `artifact ${artifactText(task)}`);
  sent = task;
}));
results.push(await flow('stream', async (d) => {
  const text = `streamed by the js sdk ${randomUUID().slice(0, 8)}`;
  d.events = [];
  let last;
  for await (const event of client.sendMessageStream(request(text))) {
    d.events.push(event.payload?.$case);
    if (event.payload?.$case === 'statusUpdate') last = event.payload.value.status.state;
    if (event.payload?.$case === 'task') last = event.payload.value.status?.state;
  }
  check(d.events[0] === 'task', 'the stream starts with the task');
  check(last === TaskState.TASK_STATE_COMPLETED, `last state ${last}`);
}));
results.push(await flow('get', async (d) => {
  check(sent, 'no task was sent');
  const task = await client.getTask({ tenant: '', id: sent.id, historyLength: undefined });
  d.id = task.id;
  check(task.id === sent.id && task.status?.state === TaskState.TASK_STATE_COMPLETED, 'the task as sent');
}));
process.exit(results.every(Boolean) ? 0 : 1);
