/**
 * Typed errors that services throw. Each carries the HTTP status it maps to and a `detail`
 * that says what was wrong and what to do; the HTTP layer turns them into error bodies.
 */
export class AppError extends Error {
  readonly status: number;
  readonly metadata?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(status: number, detail: string, opts: { metadata?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = new.target.name;
    this.status = status;
    this.metadata = opts.metadata;
    this.headers = opts.headers;
  }
}

type Opts = ConstructorParameters<typeof AppError>[2];
const withStatus = (status: number) =>
  class extends AppError {
    constructor(detail: string, opts?: Opts) {
      super(status, detail, opts);
    }
  };

export class BadRequest extends withStatus(400) {}
export class Unauthorized extends withStatus(401) {}
export class PaymentRequired extends withStatus(402) {}
export class Forbidden extends withStatus(403) {}
export class NotFound extends withStatus(404) {}
export class Conflict extends withStatus(409) {}
export class PayloadTooLarge extends withStatus(413) {}
export class UnsupportedMediaType extends withStatus(415) {}
export class TooManyRequests extends withStatus(429) {}
export class BadGateway extends withStatus(502) {}
export class ServiceUnavailable extends withStatus(503) {}
export class GatewayTimeout extends withStatus(504) {}
