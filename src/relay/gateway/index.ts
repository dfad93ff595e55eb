export { createSshGateway, type PresentedAgentKey, type SshGateway, type SshGatewayOptions } from './gateway.ts';
export { parsePublicKeyLine } from './public-keys.ts';
export { AGENT_SERVER_SOFTWARE, FORWARD_BIND_ADDRESS, FORWARD_BIND_PORT, GATEWAY_SOFTWARE } from './protocol.ts';
