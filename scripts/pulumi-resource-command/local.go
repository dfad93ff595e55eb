package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// runLocal runs script with the interpreter (/bin/sh -c unless set) in dir, as upstream's local.Command.
func runLocal(ctx context.Context, in resource.PropertyMap, script string, env []string) (*output, error) {
	interpreter := []string{"/bin/sh", "-c"}
	if v := plain(in["interpreter"]); v.IsArray() && len(v.ArrayValue()) > 0 {
		interpreter = nil
		for _, e := range v.ArrayValue() {
			interpreter = append(interpreter, plain(e).StringValue())
		}
	}
	cmd := exec.CommandContext(ctx, interpreter[0], append(interpreter[1:], script)...)
	cmd.Dir = str(in, "dir")
	cmd.Env = append(os.Environ(), env...)
	if s := str(in, "stdin"); s != "" {
		cmd.Stdin = strings.NewReader(s)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return &output{strings.TrimSuffix(stdout.String(), "\n"), strings.TrimSuffix(stderr.String(), "\n")}, nil
}
