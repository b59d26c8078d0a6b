#!/usr/bin/env node
// A Node.js gRPC client for the skbqa interop tests (tests/interop): @grpc/grpc-js with the project's protos
// (protos/skbqa/v1/api.proto) loaded at run time by @grpc/proto-loader — no generated code, no Python.
//
// Input: one JSON command, as the first argument or on stdin (stdin for large requests):
//   {"target": "127.0.0.1:50051", "call": "Ask", "request": {...}, "metadata": {...}, "deadline_ms": 5000}
// or several calls made in order over ONE channel (same connection):
//   {"target": "...", "calls": [{"call": "Ask", ...}, {"call": "grpc.health.v1.Health/Check", ...}]}
// A call names a skbqa.v1.Skbqa method (Ask, AskStream, Explain, IndexStatus) or "package.Service/Method".
// "metadata" maps a key to a string or to a list of strings (one header each). "raw_hex" sends those bytes as the
// request message instead of serializing "request" (malformed-input tests; unary methods only).
// "wire_metadata" ([[key, value], ...]) sends a unary call whose metadata goes on the wire exactly as listed —
// repeated keys included, which grpc-js and node:http2 refuse to send for `authorization` (a "single value"
// header in node:http2). That call runs over node:http2 directly: the request is serialized by proto-loader, and
// the one HEADERS frame node:http2 writes is swapped, on its way to the socket, for a header block encoded here.
// Its deadline goes to the server as grpc-timeout, and the status reported is the server's (not a local timer's).
// Output: one JSON line, {code, code_name, details, response, elapsed_ms} per call — `response` is the message,
// or the list of messages of a server stream — or {"results": [...]} for "calls". Field names as in the proto,
// 64-bit integers as strings, enums by name, defaults included.
"use strict";

const fs = require("fs");
const http2 = require("http2");
const net = require("net");
const path = require("path");
const { Duplex } = require("stream");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const REPO_PROTOS = process.env.SKBQA_PROTOS_DIR || path.resolve(__dirname, "..", "..", "..", "protos");
const LOCAL_PROTOS = path.join(__dirname, "proto");
const DEFAULT_DEADLINE_MS = 60000; // no call may hang the test run
const WIRE_GRACE_MS = 10000; // wire_metadata calls: how long past the deadline to wait for the server's status
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

function loadServices() {
  const definition = protoLoader.loadSync(
    [path.join(REPO_PROTOS, "skbqa", "v1", "api.proto"), path.join(LOCAL_PROTOS, "grpc", "health", "v1", "health.proto")],
    { ...LOADER_OPTIONS, includeDirs: [REPO_PROTOS, LOCAL_PROTOS] },
  );
  const loaded = grpc.loadPackageDefinition(definition);
  return {
    "skbqa.v1.Skbqa": loaded.skbqa.v1.Skbqa,
    "grpc.health.v1.Health": loaded.grpc.health.v1.Health,
  };
}

function codeName(code) {
  return Object.keys(grpc.status).find((name) => grpc.status[name] === code) || String(code);
}

function metadataFrom(object) {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(object || {})) {
    for (const one of Array.isArray(value) ? value : [value]) metadata.add(key, String(one));
  }
  return metadata;
}

function resolve(services, clients, name) {
  const [service, method] = name.includes("/") ? name.split("/") : ["skbqa.v1.Skbqa", name];
  const ctor = services[service];
  if (!ctor || !ctor.service[method]) throw new Error(`unknown call ${JSON.stringify(name)}`);
  return { client: clients[service], definition: ctor.service[method], method };
}

function call(target, services, clients, command) {
  const started = process.hrtime.bigint();
  const { client, definition, method } = resolve(services, clients, command.call);
  const metadata = metadataFrom(command.metadata);
  const deadline = new Date(Date.now() + (command.deadline_ms ?? DEFAULT_DEADLINE_MS));
  const options = { deadline };
  const finish = (error, response) => ({
    code: error ? error.code : grpc.status.OK,
    code_name: codeName(error ? error.code : grpc.status.OK),
    details: error ? error.details : "",
    response: response === undefined ? null : response,
    elapsed_ms: Number(process.hrtime.bigint() - started) / 1e6,
  });
  if (command.wire_metadata !== undefined) return wireCall(target, definition, command, finish);
  return new Promise((done) => {
    if (definition.responseStream) {
      const events = [];
      const stream = client[method](command.request || {}, metadata, options);
      stream.on("data", (event) => events.push(event));
      stream.on("error", (error) => done(finish(error, events)));
      stream.on("end", () => done(finish(null, events)));
      return;
    }
    const callback = (error, response) => done(finish(error, error ? undefined : response));
    if (command.raw_hex !== undefined) {
      const bytes = Buffer.from(command.raw_hex, "hex");
      client.makeUnaryRequest(definition.path, () => bytes, definition.responseDeserialize, {}, metadata, options, callback);
      return;
    }
    client[method](command.request || {}, metadata, options, callback);
  });
}

// ------------------------------------------------------------------------------------------ wire_metadata calls

function hpackInteger(value, prefixBits, firstByte) {
  const limit = (1 << prefixBits) - 1;
  if (value < limit) return [firstByte | value];
  const bytes = [firstByte | limit];
  for (value -= limit; value >= 128; value = Math.floor(value / 128)) bytes.push((value % 128) + 128);
  bytes.push(value);
  return bytes;
}

function hpackString(text) {
  const bytes = Buffer.from(text, "latin1");
  return Buffer.concat([Buffer.from(hpackInteger(bytes.length, 7, 0x00)), bytes]); // no Huffman coding
}

// Every field as "literal header field without indexing — new name" (RFC 7541 6.2.2): no dynamic table state.
function headerBlock(fields) {
  return Buffer.concat(fields.flatMap(([name, value]) => [Buffer.from([0x00]), hpackString(name), hpackString(value)]));
}

// A Duplex between node:http2 and the TCP socket that replaces the header block of the client's first HEADERS
// frame (dropping its CONTINUATION frames, padding and priority) and passes every other byte through.
class HeadersSwap extends Duplex {
  constructor(socket, block) {
    super();
    this.socket = socket;
    this.block = block;
    this.pending = Buffer.alloc(0);
    this.preface = 24;
    this.state = "scan"; // scan → (continuation) → done
    socket.on("data", (chunk) => { if (!this.push(chunk)) socket.pause(); });
    socket.on("end", () => this.push(null));
    socket.on("error", (error) => this.destroy(error));
    socket.on("close", () => this.destroy());
  }
  _read() { this.socket.resume(); }
  _write(chunk, encoding, callback) {
    if (this.state === "done") { this.socket.write(chunk, callback); return; }
    this.pending = Buffer.concat([this.pending, chunk]);
    const out = [];
    if (this.preface > 0) {
      const n = Math.min(this.preface, this.pending.length);
      out.push(this.pending.subarray(0, n));
      this.pending = this.pending.subarray(n);
      this.preface -= n;
    }
    while (this.preface === 0 && this.state !== "done" && this.pending.length >= 9) {
      const length = this.pending.readUIntBE(0, 3);
      if (this.pending.length < 9 + length) break;
      const frame = this.pending.subarray(0, 9 + length);
      this.pending = this.pending.subarray(9 + length);
      const type = frame[3];
      const flags = frame[4];
      if (this.state === "scan" && type === 0x1) {
        const header = Buffer.alloc(9);
        header.writeUIntBE(this.block.length, 0, 3);
        header[3] = 0x1;
        header[4] = (flags & 0x1) | 0x4; // END_STREAM as sent, END_HEADERS
        frame.copy(header, 5, 5, 9);
        out.push(header, this.block);
        this.state = flags & 0x4 ? "done" : "continuation";
      } else if (this.state === "continuation" && type === 0x9) {
        if (flags & 0x4) this.state = "done";
      } else {
        out.push(frame);
      }
    }
    if (this.state === "done" && this.pending.length > 0) {
      out.push(this.pending);
      this.pending = Buffer.alloc(0);
    }
    if (out.length === 0) { callback(); return; }
    this.socket.write(Buffer.concat(out), callback);
  }
  _final(callback) { this.socket.end(callback); }
  _destroy(error, callback) { this.socket.destroy(); callback(error); }
}

function grpcMessage(text) {
  try {
    return decodeURIComponent(text || "");
  } catch {
    return text || "";
  }
}

function wireCall(target, definition, command, finish) {
  const deadlineMs = command.deadline_ms ?? DEFAULT_DEADLINE_MS;
  const payload = definition.requestSerialize(command.request || {});
  const framed = Buffer.alloc(5 + payload.length);
  framed.writeUInt32BE(payload.length, 1);
  payload.copy(framed, 5);
  const fields = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", definition.path],
    [":authority", target],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["grpc-timeout", `${Math.max(1, Math.ceil(deadlineMs))}m`],
    ...command.wire_metadata.map(([key, value]) => [String(key).toLowerCase(), String(value)]),
  ];
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  return new Promise((done) => {
    let settled = false;
    let session;
    const settle = (code, details, response) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (session) session.destroy();
      done(finish(code === grpc.status.OK ? null : { code, details }, response));
    };
    // the deadline travels as grpc-timeout; the status is the server's own unless it stays silent this long after
    const timer = setTimeout(() => settle(grpc.status.DEADLINE_EXCEEDED, "client: no status from the server"), deadlineMs + WIRE_GRACE_MS);
    const socket = net.connect(port, host);
    session = http2.connect(`http://${target}`, { createConnection: () => new HeadersSwap(socket, headerBlock(fields)) });
    session.on("error", (error) => settle(grpc.status.UNAVAILABLE, `connection failed: ${error.message}`));
    // node:http2 writes its own (valid, single-valued) headers; HeadersSwap puts the block above on the wire
    const stream = session.request({ ":method": "POST", ":path": definition.path, "content-type": "application/grpc", te: "trailers" });
    const chunks = [];
    let status = null;
    const onHeaders = (headers) => {
      if (headers["grpc-status"] !== undefined) status = [Number(headers["grpc-status"]), grpcMessage(headers["grpc-message"])];
    };
    stream.on("response", onHeaders);
    stream.on("trailers", onHeaders);
    stream.on("data", (chunk) => chunks.push(chunk));
    stream.on("error", (error) => settle(grpc.status.UNAVAILABLE, `stream failed: ${error.message}`));
    stream.on("close", () => {
      if (status === null) return settle(grpc.status.INTERNAL, "no grpc-status from the server");
      if (status[0] !== grpc.status.OK) return settle(status[0], status[1]);
      const body = Buffer.concat(chunks);
      if (body.length < 5) return settle(grpc.status.INTERNAL, "no response message");
      settle(grpc.status.OK, "", definition.responseDeserialize(body.subarray(5, 5 + body.readUInt32BE(1))));
    });
    stream.end(framed);
  });
}

async function main() {
  const text = process.argv.length > 2 ? process.argv[2] : fs.readFileSync(0, "utf8");
  const command = JSON.parse(text);
  if (!command.target) throw new Error('the command needs a "target" (host:port)');
  const services = loadServices();
  // one channel for every call of the command: later calls reuse the connection of earlier ones
  const channel = new grpc.Channel(command.target, grpc.credentials.createInsecure(), {});
  const clients = {};
  for (const [name, ctor] of Object.entries(services)) {
    clients[name] = new ctor(command.target, grpc.credentials.createInsecure(), { channelOverride: channel });
  }
  try {
    if (Array.isArray(command.calls)) {
      const results = [];
      for (const one of command.calls) results.push(await call(command.target, services, clients, one));
      process.stdout.write(JSON.stringify({ results }) + "\n");
    } else {
      process.stdout.write(JSON.stringify(await call(command.target, services, clients, command)) + "\n");
    }
  } finally {
    channel.close();
  }
}

main().catch((error) => {
  process.stderr.write(`client.js: ${error && error.stack ? error.stack : error}\n`);
  process.exit(2);
});
