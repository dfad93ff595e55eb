/**
 * Calls `onStop` once when this process is asked to stop: SIGTERM or SIGINT, or its launcher
 * going away without passing the signal on. Whatever started agentplane (`npm start`, `npx
 * agentplane ...`, `bin/agentplane.js` re-running itself on the project's Node, a supervisor), a
 * signal to the outermost process reaches the real work:
 * - `bin/agentplane.js` on an older Node relays signals and keeps an IPC channel to us; when it
 *   dies the channel closes.
 * - npm and npx run us under `sh -c`; npm forwards a signal to that shell, which dies of it
 *   without passing it on, so a change of parent process means the launcher is gone.
 * Repeated signals are ignored: Ctrl-C reaches every process of the terminal's group, and npm
 * forwards it once more; the stop is already bounded by the shutdown timeout.
 * Returns a function that removes the handlers.
 */
export function onStopRequest(onStop: (reason: string) => void): () => void {
  let requested = false;
  const request = (reason: string) => {
    if (requested) return;
    requested = true;
    onStop(reason);
  };
  const onSignal = (signal: NodeJS.Signals) => request(signal);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const onDisconnect = () => request('launcher exited');
  let poll: NodeJS.Timeout | undefined;
  if (process.channel) {
    process.channel.unref();
    process.once('disconnect', onDisconnect);
  } else if (process.env.npm_lifecycle_event || process.env.npm_command) {
    const launcher = process.ppid;
    poll = setInterval(() => {
      if (process.ppid !== launcher) request('launcher exited');
    }, 250).unref();
  }
  return () => {
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('disconnect', onDisconnect);
    clearInterval(poll);
  };
}
