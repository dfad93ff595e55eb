// `node --import` this in a server process (AGENTPLANE_TEST_KUBE_CLUSTER = the cluster.json path)
// so it reaches computers' Services as a pod would: kube-network.ts's DNS and kube-proxy stand-ins.
import { readFileSync } from 'node:fs';
import { installClusterNetwork } from './kube-network.ts';

const file = process.env.AGENTPLANE_TEST_KUBE_CLUSTER;
if (file) installClusterNetwork(JSON.parse(readFileSync(file, 'utf8')));
