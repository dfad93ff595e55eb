import { z } from 'zod';

/** A Kubernetes namespace (RFC 1123 label): what both the deploy program and the kubernetes provider accept. */
export const dnsLabel = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS label: lower-case letters, digits and "-", at most 63');

/** Names of most other objects (a StorageClass, say): RFC 1123 subdomains. */
export const dnsSubdomain = z
  .string()
  .max(253, 'must be at most 253 characters')
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be lower-case letters, digits, "-" and ".", starting and ending alphanumeric');
