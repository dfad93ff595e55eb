/** How webhooks are delivered (config.webhooks). */
export interface WebhookSettings {
  /** Delay before each retry; a delivery makes `retryDelaysMs.length + 1` attempts at most. */
  retryDelaysMs: number[];
  timeoutMs: number;
  endpointConcurrency: number;
  disableAfterMs: number;
}
