// An agent on the official A2A JavaScript SDK (@a2a-js/sdk 1.3.0, its Express server), for the
// gateway's interop tests: A2A 1.0 over JSON-RPC (/a2a/jsonrpc) and HTTP+JSON (/a2a/rest), the card
// at /.well-known/agent-card.json. Its one skill, js-slow, works for SECONDS seconds, then completes.
//
//   node agent.mjs PORT [SECONDS]       (PORT 0: any free port; prints "READY <url>" when listening)
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';

const [port, seconds = '3'] = process.argv.slice(2);
const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });

class SlowExecutor {
  async execute(context, bus) {
    const { taskId, contextId } = context;
    if (!context.task) {
      const task = { id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [],
        history: [context.userMessage], metadata: undefined };
      bus.publish(AgentEvent.task(task));
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined }));
    await new Promise((resolve) => setTimeout(resolve, Number(seconds) * 1000));
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
    bus.finished();
  }

  async cancelTask() {}
}

const app = express();
const server = app.listen(Number(port), '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'JS agent', description: 'Works a while, then completes', version: '1.0.0',
    supportedInterfaces: [
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    ],
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'js-slow', name: 'js-slow', description: 'works a while', tags: ['test'], examples: [],
      inputModes: [], outputModes: [], securityRequirements: [] }],
    securitySchemes: {}, securityRequirements: [], signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new SlowExecutor());
  const options = { requestHandler: handler, userBuilder: UserBuilder.noAuthentication };
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler(options));
  app.use('/a2a/rest', restHandler(options));
  console.log(`READY ${base}`);
});
