import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { parseLocalAllow } from '../../src/provisioning/providers/local/allow.ts';
import { cgroupLayout } from '../../src/provisioning/providers/local/cgroups.ts';
import { defaultLocalRoot, localNames } from '../../src/provisioning/providers/local/names.ts';
import { parseSubnet } from '../../src/provisioning/providers/local/subnet.ts';

describe('local provider naming', () => {
  it('derives every host name of a computer from its id, within the kernel limits', () => {
    const n = localNames('/data/computers', 'cmp_0123456789abcdefghij');
    expect(n).toEqual({
      dir: '/data/computers/cmp_0123456789abcdefghij',
      home: '/data/computers/cmp_0123456789abcdefghij/home',
      cgroup: 'agentplane/cmp_0123456789abcdefghij',
      netns: 'ap-0123456789abcdefghij',
      vethHost: 'aph0123456789a',
      vethGuest: 'apg0123456789a',
      user: 'ap-0123456789abcdefghij',
    });
    expect(n.vethHost.length).toBeLessThanOrEqual(15);
    expect(n.user.length).toBeLessThanOrEqual(32);
  });

  it('refuses anything but a computer id, so no script ever sees a path or an option', () => {
    for (const id of ['cmp_../../etc', 'cmp_ABCDEFGHIJ0123456789', '-rf', 'cmp_short']) expect(() => localNames('/r', id)).toThrow(/not a computer id/);
  });
});

describe('local provider subnet', () => {
  it('aligns the block and counts its /30 slots', () => {
    expect(parseSubnet('10.231.0.0/16')).toEqual({ base: 10 * 2 ** 24 + 231 * 2 ** 16, slots: 16384 });
    expect(parseSubnet('192.168.7.77/24')).toEqual({ base: 192 * 2 ** 24 + 168 * 2 ** 16 + 7 * 256, slots: 64 });
  });

  it('rejects what is not an IPv4 block of /8 to /30', () => {
    for (const bad of ['10.0.0.0/31', '10.0.0.0/7', '10.0.0/16', '300.1.1.1/16', 'fd00::/64']) expect(() => parseSubnet(bad)).toThrow(/invalid subnet/);
  });
});

describe('cgroup layout', () => {
  it('reads a hybrid host (v1 controllers beside an empty v2 tree) as v1', () => {
    const mounts = [
      'tmpfs /sys/fs/cgroup tmpfs rw,mode=755 0 0',
      'cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0',
      'cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0',
      'cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0',
      'cgroup /sys/fs/cgroup/freezer cgroup rw,freezer 0 0',
      'cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0',
      'cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0',
    ].join('\n');
    expect(cgroupLayout(mounts)).toEqual({
      version: 1,
      usable: true,
      mounts: {
        cpu: '/sys/fs/cgroup/cpu',
        cpuacct: '/sys/fs/cgroup/cpuacct',
        memory: '/sys/fs/cgroup/memory',
        freezer: '/sys/fs/cgroup/freezer',
        pids: '/sys/fs/cgroup/pids',
      },
    });
    // The process limit is part of the sandbox: without the pids controller the provider is unavailable.
    expect(cgroupLayout(mounts.replace('cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0', ''))).toMatchObject({ version: 1, usable: false });
  });

  it('reads co-mounted v1 controllers and a pure v2 host', () => {
    const comounted = 'cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0';
    expect(cgroupLayout(comounted)).toMatchObject({
      version: 1,
      usable: false,
      mounts: { cpu: '/sys/fs/cgroup/cpu,cpuacct', cpuacct: '/sys/fs/cgroup/cpu,cpuacct' },
    });
    expect(cgroupLayout('cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0')).toEqual({ version: 2, root: '/sys/fs/cgroup', usable: true });
  });
});

describe('AGENTPLANE_LOCAL_ALLOW', () => {
  it('reads host ports and IPv4 blocks (a lone address is its /32)', () => {
    expect(parseLocalAllow('')).toEqual({ ports: [], nets: [] });
    expect(parseLocalAllow(' 9418, 203.0.113.0/24,10.1.2.3 ,0.0.0.0/0')).toEqual({ ports: [9418], nets: ['203.0.113.0/24', '10.1.2.3/32', '0.0.0.0/0'] });
  });

  it('refuses anything else, naming the entry, and stops start-up with the variable named', () => {
    for (const bad of ['0', '70000', 'example.com', '10.0.0.0/33', '300.0.0.1', '10.0.0.0/8:22', 'fd00::/8']) {
      expect(() => parseLocalAllow(bad), bad).toThrow(JSON.stringify(bad));
    }
    expect(() => loadConfig({ AGENTPLANE_LOCAL_ALLOW: '22,nope' })).toThrow(/AGENTPLANE_LOCAL_ALLOW.*"nope"/s);
    expect(() => loadConfig({ AGENTPLANE_LOCAL_ROOT: 'relative/dir' })).toThrow(/AGENTPLANE_LOCAL_ROOT/);
    expect(loadConfig({ AGENTPLANE_DATA_DIR: '/srv/ap' }).managed.local).toMatchObject({
      root: '/srv/ap-computers',
      allow: { ports: [], nets: [] },
      pidsMax: 1024,
    });
    expect(defaultLocalRoot('./.agentplane')).toBe(`${process.cwd()}/.agentplane-computers`);
  });
});
