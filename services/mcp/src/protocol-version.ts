/** The versions this endpoint speaks, newest first (the contract's Versioning, rule 2). */
export const PROTOCOL_VERSIONS = ['2025-06-18', '2025-03-26'] as const;
export type ProtocolVersion = (typeof PROTOCOL_VERSIONS)[number];

const supported = (v: unknown): v is ProtocolVersion => typeof v === 'string' && (PROTOCOL_VERSIONS as readonly string[]).includes(v);

/**
 * initialize: the version the client asks for in params.protocolVersion when we speak it, else the one in its
 * MCP-Protocol-Version header, else our newest (the MCP rule: answer a version we support, the latest by default);
 * a client that cannot speak it disconnects.
 */
export function negotiate(requested: unknown, header: string | undefined): ProtocolVersion {
  if (supported(requested)) return requested;
  if (supported(header)) return header;
  return PROTOCOL_VERSIONS[0];
}

/** A later request's MCP-Protocol-Version header, when present, must name a version we speak (else 400). */
export function headerVersionOk(header: string | undefined): boolean {
  return header === undefined || supported(header);
}
