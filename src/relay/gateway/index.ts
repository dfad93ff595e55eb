export { createSshGateway, PassThroughUnsupported, type AgentIdentity, type PresentedAgentKey, type SshGateway } from './gateway.ts';
export { parsePublicKeyLine } from './public-keys.ts';
export { FORWARD_BIND_PORT, type TunnelUse } from './protocol.ts';
