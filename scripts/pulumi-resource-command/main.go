// Command pulumi-resource-command serves command:local:Command; remote.*, assetPaths and archivePaths
// are not supported.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

var version = "0.0.0-dev"

const localCommand = "command:local:Command"

var opts = plugin.MarshalOptions{KeepUnknowns: true, SkipNulls: true}

type server struct {
	pulumirpc.UnimplementedResourceProviderServer
}

func main() {
	err := provider.Main("command", func(*provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return &server{}, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func (*server) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (*server) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":"command","version":%q}`, version)}, nil
}

func (*server) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (*server) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (*server) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{SupportsPreview: true}, nil
}

func (*server) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	if t := resource.URN(req.GetUrn()).Type(); t != localCommand {
		return nil, fmt.Errorf("%s is not supported by this pulumi-resource-command build", t)
	}
	news, err := plugin.UnmarshalProperties(req.GetNews(), opts)
	if err != nil {
		return nil, err
	}
	var failures []*pulumirpc.CheckFailure
	for _, k := range []resource.PropertyKey{"assetPaths", "archivePaths"} {
		if v, ok := news[k]; ok && !v.IsNull() {
			failures = append(failures, &pulumirpc.CheckFailure{Property: string(k), Reason: "not supported by this build"})
		}
	}
	return &pulumirpc.CheckResponse{Inputs: req.GetNews(), Failures: failures}, nil
}

func (*server) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	oldStruct := req.GetOldInputs()
	if oldStruct == nil {
		oldStruct = req.GetOlds()
	}
	olds, err := plugin.UnmarshalProperties(oldStruct, opts)
	if err != nil {
		return nil, err
	}
	news, err := plugin.UnmarshalProperties(req.GetNews(), opts)
	if err != nil {
		return nil, err
	}
	keys := map[resource.PropertyKey]bool{}
	for k := range olds {
		keys[k] = true
	}
	for k := range news {
		keys[k] = true
	}
	var diffs, replaces []string
	for k := range keys {
		if k == "stdout" || k == "stderr" || olds[k].DeepEquals(news[k]) {
			continue
		}
		diffs = append(diffs, string(k))
		// As upstream: new triggers mean a new resource, so create runs again.
		if k == "triggers" {
			replaces = append(replaces, string(k))
		}
	}
	sort.Strings(diffs)
	changes := pulumirpc.DiffResponse_DIFF_NONE
	if len(diffs) > 0 {
		changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	return &pulumirpc.DiffResponse{Changes: changes, Diffs: diffs, Replaces: replaces}, nil
}

func (*server) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	news, err := plugin.UnmarshalProperties(req.GetProperties(), opts)
	if err != nil {
		return nil, err
	}
	if req.GetPreview() {
		props, err := withOutputs(news, nil)
		return &pulumirpc.CreateResponse{Properties: props}, err
	}
	out, err := run(ctx, news, "create", nil)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	props, err := withOutputs(news, out)
	return &pulumirpc.CreateResponse{Id: hex.EncodeToString(id), Properties: props}, err
}

func (*server) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

func (*server) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	olds, err := plugin.UnmarshalProperties(req.GetOlds(), opts)
	if err != nil {
		return nil, err
	}
	news, err := plugin.UnmarshalProperties(req.GetNews(), opts)
	if err != nil {
		return nil, err
	}
	if req.GetPreview() {
		props, err := withOutputs(news, nil)
		return &pulumirpc.UpdateResponse{Properties: props}, err
	}
	script := resource.PropertyKey("update")
	if str(news, script) == "" {
		script = "create"
	}
	out, err := run(ctx, news, script, olds)
	if err != nil {
		return nil, err
	}
	props, err := withOutputs(news, out)
	return &pulumirpc.UpdateResponse{Properties: props}, err
}

func (*server) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	olds, err := plugin.UnmarshalProperties(req.GetProperties(), opts)
	if err != nil {
		return nil, err
	}
	_, err = run(ctx, olds, "delete", olds)
	return &emptypb.Empty{}, err
}

type output struct{ stdout, stderr string }

// withOutputs is the state: the inputs plus stdout and stderr, unknown during previews.
func withOutputs(in resource.PropertyMap, out *output) (*structpb.Struct, error) {
	state := in.Copy()
	if out == nil {
		state["stdout"] = resource.MakeComputed(resource.NewStringProperty(""))
		state["stderr"] = resource.MakeComputed(resource.NewStringProperty(""))
	} else {
		state["stdout"] = resource.NewStringProperty(out.stdout)
		state["stderr"] = resource.NewStringProperty(out.stderr)
	}
	return plugin.MarshalProperties(state, opts)
}

func str(m resource.PropertyMap, k resource.PropertyKey) string {
	if v, ok := m[k]; ok && v.IsString() {
		return v.StringValue()
	}
	return ""
}

// run executes the script under key (create, update or delete); prev's outputs reach it as
// PULUMI_COMMAND_STDOUT/STDERR, as upstream does.
func run(ctx context.Context, in resource.PropertyMap, key resource.PropertyKey, prev resource.PropertyMap) (*output, error) {
	script := str(in, key)
	if script == "" {
		return &output{}, nil
	}
	interpreter := []string{"/bin/sh", "-c"}
	if v := in["interpreter"]; v.IsArray() && len(v.ArrayValue()) > 0 {
		interpreter = nil
		for _, e := range v.ArrayValue() {
			interpreter = append(interpreter, e.StringValue())
		}
	}
	cmd := exec.CommandContext(ctx, interpreter[0], append(interpreter[1:], script)...)
	cmd.Dir = str(in, "dir")
	cmd.Env = os.Environ()
	if v := in["environment"]; v.IsObject() {
		for k, e := range v.ObjectValue() {
			if e.IsString() {
				cmd.Env = append(cmd.Env, string(k)+"="+e.StringValue())
			}
		}
	}
	if v := in["addPreviousOutputInEnv"]; prev != nil && !(v.IsBool() && !v.BoolValue()) {
		cmd.Env = append(cmd.Env, "PULUMI_COMMAND_STDOUT="+str(prev, "stdout"), "PULUMI_COMMAND_STDERR="+str(prev, "stderr"))
	}
	if s := str(in, "stdin"); s != "" {
		cmd.Stdin = strings.NewReader(s)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", key, err, stderr.String())
	}
	return &output{strings.TrimSuffix(stdout.String(), "\n"), strings.TrimSuffix(stderr.String(), "\n")}, nil
}
