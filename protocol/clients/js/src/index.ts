export * from "./codec.js";
export * from "./frames.js";
export * from "./client.js";
