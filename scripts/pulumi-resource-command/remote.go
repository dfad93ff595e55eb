package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// runRemote runs script over SSH as upstream's remote.Command: connection as upstream's
// (key, password or agent; a bastion through proxy; dialErrorLimit and perDialTimeout), the
// environment exported by the remote shell rather than sent as SSH env requests, so it does not
// depend on the server's AcceptEnv.
func runRemote(ctx context.Context, connection resource.PropertyValue, script string, env []string, stdin string) (*output, error) {
	if !connection.IsObject() {
		return nil, errors.New("connection is required")
	}
	conn := connection.ObjectValue()
	var client *ssh.Client
	var err error
	if proxy := plain(conn["proxy"]); proxy.IsObject() {
		bastion, err := dial(ctx, proxy.ObjectValue(), nil)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		defer bastion.Close()
		client, err = dial(ctx, conn, bastion)
	} else {
		client, err = dial(ctx, conn, nil)
	}
	if err != nil {
		return nil, err
	}
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	defer session.Close()
	var stdout, stderr bytes.Buffer
	session.Stdout, session.Stderr = &stdout, &stderr
	if stdin != "" {
		session.Stdin = strings.NewReader(stdin)
	}
	done := make(chan error, 1)
	go func() { done <- session.Run(exports(env) + script) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = session.Signal(ssh.SIGTERM)
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return &output{strings.TrimSuffix(stdout.String(), "\n"), strings.TrimSuffix(stderr.String(), "\n")}, nil
}

// exports is `export K='v'; ...` for each variable, quoted for a POSIX shell.
func exports(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString("export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'; ")
	}
	return b.String()
}

// dial connects to the connection's host, through via when set, retrying as dialErrorLimit says.
func dial(ctx context.Context, conn resource.PropertyMap, via *ssh.Client) (*ssh.Client, error) {
	config, err := clientConfig(conn)
	if err != nil {
		return nil, err
	}
	port := num(conn, "port", 22)
	addr := net.JoinHostPort(str(conn, "host"), strconv.Itoa(port))
	limit := num(conn, "dialErrorLimit", 10)
	for attempt := 1; ; attempt++ {
		client, err := dialOnce(addr, config, via)
		if err == nil {
			return client, nil
		}
		var authErr *ssh.ServerAuthError
		if errors.As(err, &authErr) || strings.Contains(err.Error(), "host key") || (limit >= 0 && attempt >= limit) {
			return nil, fmt.Errorf("dial %s as %s: %w", addr, config.User, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func dialOnce(addr string, config *ssh.ClientConfig, via *ssh.Client) (*ssh.Client, error) {
	if via == nil {
		return ssh.Dial("tcp", addr, config)
	}
	nc, err := via.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c, chans, reqs, err := ssh.NewClientConn(nc, addr, config)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

func clientConfig(conn resource.PropertyMap) (*ssh.ClientConfig, error) {
	user := str(conn, "user")
	if user == "" {
		user = "root"
	}
	var auth []ssh.AuthMethod
	if key := str(conn, "privateKey"); key != "" {
		var signer ssh.Signer
		var err error
		if pass := str(conn, "privateKeyPassword"); pass != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(key), []byte(pass))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(key))
		}
		if err != nil {
			return nil, fmt.Errorf("privateKey: %w", err)
		}
		auth = append(auth, ssh.PublicKeys(signer))
	}
	socket := str(conn, "agentSocketPath")
	if socket == "" {
		socket = os.Getenv("SSH_AUTH_SOCK")
	}
	if socket != "" {
		if a, err := net.Dial("unix", socket); err == nil {
			auth = append(auth, ssh.PublicKeysCallback(agent.NewClient(a).Signers))
		}
	}
	if pass := str(conn, "password"); pass != "" {
		auth = append(auth, ssh.Password(pass), ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
			answers := make([]string, len(questions))
			for i := range answers {
				answers[i] = pass
			}
			return answers, nil
		}))
	}
	hostKey := ssh.InsecureIgnoreHostKey() // upstream's behaviour when no hostKey is given
	if want := str(conn, "hostKey"); want != "" {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(want))
		if err != nil {
			return nil, fmt.Errorf("hostKey: %w", err)
		}
		hostKey = ssh.FixedHostKey(key)
	}
	timeout := time.Duration(num(conn, "perDialTimeout", 15)) * time.Second
	return &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: hostKey, Timeout: timeout}, nil
}
