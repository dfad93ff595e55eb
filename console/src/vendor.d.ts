/** highlight.js's ES-module builds (@highlightjs/cdn-assets ships no types): the parts the console uses. */
declare module 'hljs/core' {
  const hljs: {
    registerLanguage(name: string, grammar: unknown): void;
    getLanguage(name: string): unknown;
    highlight(code: string, options: { language: string; ignoreIllegals?: boolean }): { value: string };
  };
  export default hljs;
}
