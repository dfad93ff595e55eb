/** `text` with the user names and passwords of any URLs in it removed, for messages and logs. */
export function redactCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1');
}
