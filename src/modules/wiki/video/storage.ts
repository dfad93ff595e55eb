/** Where run videos live: the data directory of a single node, or S3-compatible object storage. */
export interface VideoStorage {
  readonly kind: 'data-directory' | 's3';
  /** A URL the client PUTs the video to until `expiresAt`, and the headers the PUT must send. */
  uploadUrl(key: string, contentType: string, maxBytes: number, expiresAt: Date): Promise<{ url: string; headers: Record<string, string> }>;
  /** Whether the object exists (an upload finished). */
  exists(key: string): Promise<boolean>;
  remove(key: string): Promise<void>;
}
