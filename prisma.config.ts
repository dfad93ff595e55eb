import { defineConfig } from 'prisma/config';

// The CLI is only used offline for `prisma generate`; the app applies migrations itself
// (src/db/migrate.ts) and picks its database adapter at run time (src/db/client.ts).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
