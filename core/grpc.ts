/**
 * The bridge between protobuf-es service descriptors and @grpc/grpc-js.
 *
 * protobuf-es generates descriptors but no transport; this file derives the
 * grpc-js ServiceDefinition from a descriptor (paths, stream flags, binary
 * (de)serialisation) and gives both sides typed, promise / async-iterator
 * shaped APIs. Only unary and server-streaming methods are supported because
 * that is all the project's services use.
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { ResearchError, type FailureName } from "./failure.js";

type Unary = { methodKind: "unary" };
type ServerStreaming = { methodKind: "server_streaming" };

export interface CallContext {
  /** Aborted when the client cancels or its deadline passes. */
  signal: AbortSignal;
  metadata: grpc.Metadata;
  peer: string;
}

export type ServiceHandlers<S extends GenServiceMethods> = {
  [K in keyof S]: S[K] extends Unary
    ? (req: MessageShape<S[K]["input"]>, ctx: CallContext) => Promise<MessageInitShape<S[K]["output"]>>
    : S[K] extends ServerStreaming
      ? (req: MessageShape<S[K]["input"]>, ctx: CallContext) => AsyncIterable<MessageInitShape<S[K]["output"]>>
      : never;
};

export interface CallOptions {
  signal?: AbortSignal;
  /** Milliseconds from now. */
  timeoutMs?: number;
}

export type ServiceClient<S extends GenServiceMethods> = {
  [K in keyof S]: S[K] extends Unary
    ? (req: MessageInitShape<S[K]["input"]>, opts?: CallOptions) => Promise<MessageShape<S[K]["output"]>>
    : S[K] extends ServerStreaming
      ? (req: MessageInitShape<S[K]["input"]>, opts?: CallOptions) => AsyncIterable<MessageShape<S[K]["output"]>>
      : never;
} & { close(): void; raw: grpc.Client };

/** The status a handler's failure is sent with; the client maps it back in fromServiceError. */
const STATUS_OF_LABEL: Partial<Record<FailureName, grpc.status>> = {
  invalid_config: grpc.status.INVALID_ARGUMENT,
  runner_unavailable: grpc.status.UNAVAILABLE,
};

function codec<D extends DescMessage>(schema: D) {
  return {
    serialize: (msg: MessageInitShape<D>) => Buffer.from(toBinary(schema, create(schema, msg))),
    deserialize: (buf: Buffer) => fromBinary(schema, buf),
  };
}

export function serviceDefinition<S extends GenServiceMethods>(desc: GenService<S>): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of desc.methods) {
    if (method.methodKind !== "unary" && method.methodKind !== "server_streaming") {
      throw new Error(`${desc.typeName}.${method.name}: ${method.methodKind} is not supported`);
    }
    const input = codec(method.input);
    const output = codec(method.output);
    def[method.localName] = {
      path: `/${desc.typeName}/${method.name}`,
      requestStream: false,
      responseStream: method.methodKind === "server_streaming",
      requestSerialize: input.serialize as (msg: unknown) => Buffer,
      requestDeserialize: input.deserialize,
      responseSerialize: output.serialize as (msg: unknown) => Buffer,
      responseDeserialize: output.deserialize,
    };
  }
  return def;
}

function toStatus(err: unknown): grpc.ServiceError {
  const { label, message } = ResearchError.from(err);
  const code = STATUS_OF_LABEL[label] ?? grpc.status.INTERNAL;
  return Object.assign(new Error(message), { code, details: message, metadata: new grpc.Metadata() });
}

function contextOf(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>): CallContext {
  const abort = new AbortController();
  call.on("cancelled", () => abort.abort(new ResearchError("crash", "cancelled by client")));
  // A deadline surfaces as "cancelled" too; both must stop the work.
  return { signal: abort.signal, metadata: call.metadata, peer: call.getPeer() };
}

/**
 * A request whose bytes do not decode as its message. grpc-js would end such a call INTERNAL, as if
 * the service had failed; the server's deserializer returns this instead, and the call ends
 * INVALID_ARGUMENT, the caller's mistake, before any handler runs.
 */
class Undecodable {
  constructor(readonly details: string) {}
}

function undecodable(request: unknown): grpc.ServiceError | undefined {
  if (!(request instanceof Undecodable)) return undefined;
  return Object.assign(new Error(request.details), { code: grpc.status.INVALID_ARGUMENT, details: request.details, metadata: new grpc.Metadata() });
}

/** The service's definition for a server: a request that does not decode becomes an Undecodable. */
function serverDefinition<S extends GenServiceMethods>(desc: GenService<S>): grpc.ServiceDefinition {
  const def = serviceDefinition(desc);
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of desc.methods) {
    const m = def[method.localName]!;
    const decode = m.requestDeserialize;
    out[method.localName] = {
      ...m,
      requestDeserialize: (buf: Buffer) => {
        try {
          return decode(buf);
        } catch (err) {
          return new Undecodable(`the request is not a ${method.input.typeName}: ${(err as Error).message}`);
        }
      },
    };
  }
  return out;
}

const UNAUTHENTICATED: grpc.ServiceError = Object.assign(new Error("the call carries no valid token for this service"), {
  code: grpc.status.UNAUTHENTICATED,
  details: "the call carries no valid token for this service",
  metadata: new grpc.Metadata(),
});

/**
 * `authorize`, when given, sees each call's metadata first; a call it refuses
 * ends UNAUTHENTICATED before its handler runs.
 */
export function addService<S extends GenServiceMethods>(
  server: grpc.Server,
  desc: GenService<S>,
  handlers: ServiceHandlers<S>,
  authorize: (metadata: grpc.Metadata) => boolean = () => true,
): void {
  const impl: grpc.UntypedServiceImplementation = {};
  for (const method of desc.methods) {
    const handler = (handlers as Record<string, (req: unknown, ctx: CallContext) => unknown>)[method.localName];
    if (!handler) throw new Error(`no handler for ${desc.typeName}.${method.name}`);
    if (method.methodKind === "unary") {
      impl[method.localName] = (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        if (!authorize(call.metadata)) return cb(UNAUTHENTICATED);
        const bad = undecodable(call.request);
        if (bad) return cb(bad);
        (handler(call.request, contextOf(call)) as Promise<unknown>).then(
          (res) => cb(null, res),
          (err) => cb(toStatus(err)),
        );
      };
    } else {
      impl[method.localName] = async (call: grpc.ServerWritableStream<unknown, unknown>) => {
        if (!authorize(call.metadata)) return void call.emit("error", UNAUTHENTICATED);
        const bad = undecodable(call.request);
        if (bad) return void call.emit("error", bad);
        const ctx = contextOf(call);
        try {
          for await (const msg of handler(call.request, ctx) as AsyncIterable<unknown>) {
            if (ctx.signal.aborted) break;
            if (!call.write(msg)) await new Promise((r) => call.once("drain", r));
          }
          if (!ctx.signal.aborted) call.end();
        } catch (err) {
          // grpc-js turns an "error" event on a server stream into the call's final status.
          if (!ctx.signal.aborted) call.emit("error", toStatus(err));
        }
      };
    }
  }
  server.addService(serverDefinition(desc), impl);
}

function callOptions(opts?: CallOptions): grpc.CallOptions {
  return opts?.timeoutMs ? { deadline: new Date(Date.now() + opts.timeoutMs) } : {};
}

/** The cause keeps the status and metadata for whoever needs more than the label. */
function fromServiceError(err: grpc.ServiceError): ResearchError {
  // INVALID_ARGUMENT is the caller's mistake; anything else means the service is not there for us.
  const label = err.code === grpc.status.INVALID_ARGUMENT ? "invalid_config" : "runner_unavailable";
  const reason = err.code === grpc.status.DEADLINE_EXCEEDED ? "timeout" : err.code === grpc.status.UNAVAILABLE ? "network" : undefined;
  return new ResearchError(label, err.details || err.message, "", { cause: err, reason });
}

export function createClient<S extends GenServiceMethods>(
  desc: GenService<S>,
  address: string,
  credentials = grpc.credentials.createInsecure(),
  options: grpc.ChannelOptions = {},
): ServiceClient<S> {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(desc), desc.name);
  const raw = new Ctor(address, credentials, {
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    "grpc.max_send_message_length": 64 * 1024 * 1024,
    ...options,
  });
  const client: Record<string, unknown> = { raw, close: () => raw.close() };
  for (const method of desc.methods) {
    const fn = (raw as unknown as Record<string, (...args: unknown[]) => unknown>)[method.localName]!.bind(raw);
    if (method.methodKind === "unary") {
      client[method.localName] = (req: unknown, opts?: CallOptions) =>
        new Promise((resolve, reject) => {
          const call = fn(req, new grpc.Metadata(), callOptions(opts), (err: grpc.ServiceError | null, res: unknown) =>
            err ? reject(fromServiceError(err)) : resolve(res),
          ) as grpc.ClientUnaryCall;
          opts?.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        });
    } else {
      client[method.localName] = (req: unknown, opts?: CallOptions) => ({
        async *[Symbol.asyncIterator]() {
          const call = fn(req, new grpc.Metadata(), callOptions(opts)) as grpc.ClientReadableStream<unknown>;
          const onAbort = () => call.cancel();
          opts?.signal?.addEventListener("abort", onAbort, { once: true });
          try {
            for await (const msg of call) yield msg;
          } catch (err) {
            throw fromServiceError(err as grpc.ServiceError);
          } finally {
            opts?.signal?.removeEventListener("abort", onAbort);
            call.cancel();
          }
        },
      });
    }
  }
  return client as ServiceClient<S>;
}
