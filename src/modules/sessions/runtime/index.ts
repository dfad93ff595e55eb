export * from './content.ts';
export * from './model-client.ts';
export * from './tools.ts';
export * from './autonomy.ts';
export * from './turn.ts';
export * from './pricing.ts';
