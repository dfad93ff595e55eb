import { Command } from 'commander';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import type { Logger } from './lib/logger.ts';
import type { BackupOptions } from './backup/backup-command.ts';
import type { AgentCommandOptions } from './on-machine/machine-agent/command.ts';
import type { CiRunOptions } from './on-machine/ci-run/run.ts';
import { registerRelayCommands } from './on-machine/relay-client/commands.ts';
import { registerConfigCommands } from './on-machine/config-cli/commands.ts';
import { countExternalMemoryWithHeap } from './lib/v8-heap.ts';

// Every command loads its own code when it runs (`await import`): a command that talks to a
// control plane over HTTP (ssh, port-forward, ci run) must not pay for loading the server.

/** Runs until asked to stop (see onStopRequest), then stops gracefully and exits 0. */
async function untilStopRequested(log: Logger, stop: () => Promise<void>): Promise<void> {
  const { onStopRequest } = await import('./lib/stop-request.ts');
  onStopRequest((reason) => {
    log.info({ reason }, 'stopping');
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  });
}

/**
 * Configuration and a logger. Long-running commands log to stdout; one-shot commands log to
 * stderr, so their stdout holds only their answer (`bootstrap --json | jq` works).
 */
async function setup(logTo: 'stdout' | 'stderr' = 'stdout'): Promise<{ config: Config; log: Logger }> {
  const [{ loadConfig }, { createLogger }] = await Promise.all([import('./config.ts'), import('./lib/logger.ts')]);
  const config = loadConfig();
  return { config, log: createLogger({ level: config.logLevel, format: config.logFormat, fd: logTo === 'stdout' ? 1 : 2 }) };
}

/** Opens the configured database for one command and closes it afterwards. */
async function withDatabase<T>(fn: (db: Database, log: Logger) => Promise<T>): Promise<T> {
  const { config, log } = await setup('stderr');
  await privateDataDir(config, log);
  const { openDatabase } = await import('./db/client.ts');
  const db = await openDatabase(config);
  try {
    return await fn(db, log);
  } finally {
    await db.close();
  }
}

/** The data directory is the control plane's alone (code on a `local` computer must not read it). */
async function privateDataDir(config: Config, log: Logger): Promise<void> {
  const { makeDataDirPrivate } = await import('./lib/private-data-dir.ts');
  const changed = makeDataDirPrivate(config.dataDir);
  if (changed > 0) log.info({ dataDir: config.dataDir, changed }, 'data directory made private to this user (folders 0700, files 0600)');
}

const program = new Command('agentplane').description('Self-hosted control plane for coding agents');

program
  .command('serve')
  .description('serve the API (embedded PGlite unless DATABASE_URL is set); migrates on start')
  .action(async () => {
    countExternalMemoryWithHeap();
    const { config, log } = await setup();
    await privateDataDir(config, log);
    const { startServer } = await import('./server.ts');
    // Listening for a stop before starting: a signal during migrations waits for the start, then stops.
    const starting = startServer(config, log);
    await untilStopRequested(log, async () => (await starting).stop());
    await starting;
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .action(() =>
    withDatabase(async (db, log) => {
      const { migrateDatabase } = await import('./db/migrations.ts');
      const applied = await migrateDatabase(db, log);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    }),
  );

program
  .command('bootstrap')
  .description('create an organization with an active owner and print a personal API key once (idempotent)')
  .requiredOption('--org <name>', 'organization name')
  .requiredOption('--email <email>', "owner's email")
  .option('--json', 'print one JSON line {"organizationId","userId","apiKey"}')
  .option('--new-key', 'issue another API key even if one was issued before')
  .action(async (opts: { org: string; email: string; json?: boolean; newKey?: boolean }) => {
    const { z } = await import('zod');
    if (!z.email().safeParse(opts.email).success) throw new Error(`--email ${opts.email} is not an email address`);
    return withDatabase(async (db, log) => {
      const [{ migrateDatabase }, { bootstrapOrganization }, { systemClock }] = await Promise.all([
        import('./db/migrations.ts'),
        import('./modules/organization/bootstrap.ts'),
        import('./lib/clock.ts'),
      ]);
      await migrateDatabase(db, log);
      const r = await bootstrapOrganization(db.prisma, opts, systemClock);
      if (opts.json) {
        process.stdout.write(JSON.stringify({ organizationId: r.organizationId, userId: r.userId, apiKey: r.apiKey }) + '\n');
        return;
      }
      process.stdout.write(`organization ${r.organizationId}, owner ${r.userId}\n`);
      process.stdout.write(
        r.apiKey ? `API key (shown once, store it now): ${r.apiKey}\n` : 'An API key was issued before and is not shown again; pass --new-key for another.\n',
      );
    });
  });

program
  .command('worker')
  .description('run background jobs only (scale-out; needs DATABASE_URL shared with the servers)')
  .action(async () => {
    const { config, log } = await setup();
    await privateDataDir(config, log);
    const [{ openDatabase }, { migrateDatabase }, { compose }] = await Promise.all([
      import('./db/client.ts'),
      import('./db/migrations.ts'),
      import('./compose.ts'),
    ]);
    const db = await openDatabase(config);
    await migrateDatabase(db, log);
    const worker = await compose({ role: 'worker', config, db, log });
    await worker.start();
    log.info({ database: db.kind }, 'worker running');
    await untilStopRequested(log, async () => {
      await worker.stop();
      await db.close();
    });
  });

program
  .command('analytics')
  .description('analytics maintenance')
  .command('seed')
  .description('write synthetic analytics events for an organization and roll them up (demos, benchmarks)')
  .requiredOption('--org <id>', 'organization id')
  .requiredOption('--users <n>', 'number of synthetic users')
  .requiredOption('--days <n>', 'number of days, ending yesterday (UTC) or at --end')
  .option('--seed <n>', 'random seed: the same seed writes the same events', '1')
  .option('--end <date>', 'last day to seed, YYYY-MM-DD (UTC); default yesterday')
  .action((opts: { org: string; users: string; days: string; seed: string; end?: string }) =>
    withDatabase(async (db, log) => {
      const [{ migrateDatabase }, { seedCommand }, { systemClock }] = await Promise.all([
        import('./db/migrations.ts'),
        import('./modules/analytics/seed-command.ts'),
        import('./lib/clock.ts'),
      ]);
      await migrateDatabase(db, log);
      await seedCommand(db.prisma, opts, systemClock, (line) => process.stdout.write(`${line}\n`));
    }),
  );

program
  .command('agent')
  .description('run on a machine: register it as a byom computer and serve the control plane through its SSH gateway (outbound only: no inbound port, no sshd)')
  .requiredOption('--url <base_url>', "the control plane's base URL")
  .option('--api-key <key>', 'API key, only to register the machine (default: $AGENTPLANE_API_KEY)')
  .option(
    '--registration-token <token>',
    "instead of an API key: the single-use token a template's program gave this machine (default: $AGENTPLANE_REGISTRATION_TOKEN)",
  )
  .requiredOption('--name <name>', 'computer name')
  .option('--state-dir <dir>', 'keys and registration (default: ~/.config/agentplane/agent/<name>/)')
  .option('--gateway-host-key <fingerprint>', "pin the gateway's host key (SHA256:...) instead of trusting the first one seen")
  .option('--gateway <ssh_url>', 'ssh://host:port of the SSH gateway instead of the registered relayAgentUrl')
  .action(async (opts: AgentCommandOptions) => (await import('./on-machine/machine-agent/command.ts')).runAgentCommand(opts));

program
  .command('ci')
  .description('CI automations')
  .command('run')
  .description(
    "run a CI automation from inside its workflow: a session on the automation's computer (or this runner, registered for the job), the result posted to the pull request",
  )
  .option('--url <base_url>', "the control plane's base URL (default: $AGENTPLANE_URL)")
  .option('--api-key <key>', 'a service-account API key (default: $AGENTPLANE_API_KEY)')
  .option('--automation <id>', 'the automation id (default: $AGENTPLANE_AUTOMATION_ID)')
  .option('--model <id>', 'the model of the session (default: $AGENTPLANE_MODEL, else the organization default)')
  .option('--reasoning-effort <level>', 'default: $AGENTPLANE_REASONING_EFFORT')
  .option('--register-runner', 'run the session on this runner, registered as a byom computer for the job (default: $AGENTPLANE_REGISTER_RUNNER)')
  .option('--timeout-minutes <n>', 'how long to wait for the agent (default: $AGENTPLANE_TIMEOUT_MINUTES, else 30)')
  .action(async (opts: CiRunOptions) => {
    // The runner's agent tunnel may leave sockets closing; the job is done either way.
    const { runCi } = await import('./on-machine/ci-run/run.ts');
    process.exit(await runCi(opts));
  });

program
  .command('backup')
  .description('write an encrypted archive of this installation (AGENTPLANE_BACKUP_PASSPHRASE), consistent while the server runs')
  .requiredOption('--out <file>', 'the archive to write (replaced whole, never left half-written)')
  .option('--pulumi-state-only', 'only the Pulumi state and the encryption key (with PostgreSQL, beside pg_dump or PITR)')
  .action(async (opts: BackupOptions) => {
    const { config } = await setup('stderr');
    const { runBackup } = await import('./backup/backup-command.ts');
    await runBackup(config, opts, (line) => process.stdout.write(`${line}\n`));
  });

program
  .command('restore <file>')
  .description('restore an archive `backup` wrote into AGENTPLANE_DATA_DIR, which must be empty or absent')
  .action(async (file: string) => {
    const { config } = await setup('stderr');
    const { runRestore } = await import('./backup/restore-command.ts');
    await runRestore(config.dataDir, file, (line) => process.stdout.write(`${line}\n`));
  });

registerRelayCommands(program);
registerConfigCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`agentplane: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
