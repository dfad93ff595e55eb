/**
 * A statement and its parameters, numbered from where it sits: to run alone, or as one part of
 * another statement's WITH, so that rows of several tables are stored in one round trip.
 */
export interface SqlPart {
  sql: string;
  params: unknown[];
}
