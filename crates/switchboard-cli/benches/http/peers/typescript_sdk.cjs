// The official TypeScript SDK (npm `@modelcontextprotocol/sdk`, pinned in xtask/mcp-servers)
// serving one tool over Streamable HTTP, for the HTTP benchmark (benches/http.rs). The tool is
// the one plain rmcp serves there: it answers every call with a fixed structured result (the
// answer Switchboard gave at start-up, in BENCH_TOOL_RESULT), as JSON text and as
// `structuredContent`, so the rows differ by their server stack, not by the tool.
//
// Usage: node typescript_sdk.cjs default|fastest, with NODE_PATH at target/mcp-servers/node_modules
// (this file is CommonJS so that NODE_PATH resolves the SDK), BENCH_TOOL_NAME and
// BENCH_TOOL_RESULT set. It listens on a free loopback port and prints
// `listening on http://127.0.0.1:PORT/mcp` once it accepts connections.
//
// Both modes follow the SDK's server guide (docs/server.md of the SDK's repository, "Streamable
// HTTP": "Stateless vs stateful sessions" and "JSON response mode") and its examples, all on
// `createMcpExpressApp()`, the Express app the guide serves with:
// - default: `simpleStreamableHttp.ts`: a session per client (`sessionIdGenerator: () =>
//   randomUUID()`), one transport per session kept in a map, answers as SSE streams (the
//   transport's default);
// - fastest: `simpleStatelessStreamableHttp.ts` with `enableJsonResponse: true`
//   (`jsonResponseStreamableHttp.ts`): no sessions (`sessionIdGenerator: undefined`), a new
//   server and transport for every request as the guide's stateless example does, and plain
//   JSON answers.
'use strict';

const { randomUUID } = require('node:crypto');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { createMcpExpressApp } = require('@modelcontextprotocol/sdk/server/express.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');

const mode = process.argv[2];
const toolName = process.env.BENCH_TOOL_NAME;
const result = JSON.parse(process.env.BENCH_TOOL_RESULT ?? 'null');
if ((mode !== 'default' && mode !== 'fastest') || !toolName || result === null) {
    console.error('usage: BENCH_TOOL_NAME=… BENCH_TOOL_RESULT={…} node typescript_sdk.cjs default|fastest');
    process.exit(2);
}
const resultText = JSON.stringify(result);

function newServer() {
    const server = new McpServer({ name: 'bench-typescript-sdk', version: '0.0.0' });
    server.registerTool(toolName, { description: 'Answers with a fixed structured result.' }, async () => ({
        content: [{ type: 'text', text: resultText }],
        structuredContent: result
    }));
    return server;
}

function jsonRpcError(res, status, message) {
    res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

const app = createMcpExpressApp();

if (mode === 'default') {
    const transports = new Map();
    app.post('/mcp', async (req, res) => {
        const sessionId = req.headers['mcp-session-id'];
        let transport = sessionId ? transports.get(sessionId) : undefined;
        if (!transport) {
            if (sessionId || !isInitializeRequest(req.body)) {
                jsonRpcError(res, 400, 'Bad Request: No valid session ID provided');
                return;
            }
            const created = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: id => transports.set(id, created)
            });
            created.onclose = () => {
                if (created.sessionId) transports.delete(created.sessionId);
            };
            await newServer().connect(created);
            transport = created;
        }
        await transport.handleRequest(req, res, req.body);
    });
    const bySession = async (req, res) => {
        const transport = transports.get(req.headers['mcp-session-id']);
        if (!transport) {
            jsonRpcError(res, 400, 'Invalid or missing session ID');
            return;
        }
        await transport.handleRequest(req, res);
    };
    app.get('/mcp', bySession);
    app.delete('/mcp', bySession);
} else {
    app.post('/mcp', async (req, res) => {
        const server = newServer();
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: undefined,
            enableJsonResponse: true
        });
        res.on('close', () => {
            transport.close();
            server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, req.body);
    });
    const notAllowed = (_req, res) => jsonRpcError(res, 405, 'Method not allowed.');
    app.get('/mcp', notAllowed);
    app.delete('/mcp', notAllowed);
}

const listener = app.listen(0, '127.0.0.1', error => {
    if (error) {
        console.error(`cannot listen: ${error}`);
        process.exit(1);
    }
    console.log(`listening on http://127.0.0.1:${listener.address().port}/mcp`);
});
