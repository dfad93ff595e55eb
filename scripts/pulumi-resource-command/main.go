// Command pulumi-resource-command is agentplane's build of the command provider, for the Go module
// proxy refuses upstream's (github.com/pulumi/pulumi-command/provider). It serves
// command:local:Command and command:remote:Command with upstream's inputs and outputs, and its
// schema (schema.json) through GetSchema, so Pulumi YAML programs can declare both. Not served:
// local assetPaths/archivePaths, remote CopyToRemote and CopyFile.
package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

var version = "0.0.0-dev"

//go:embed schema.json
var schemaJSON []byte

const (
	localCommand  = "command:local:Command"
	remoteCommand = "command:remote:Command"
)

var opts = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, SkipNulls: true}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

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

// GetSchema answers schema.json with this build's version in it.
func (*server) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	var schema map[string]any
	if err := json.Unmarshal(schemaJSON, &schema); err != nil {
		return nil, err
	}
	schema["version"] = version
	out, err := json.Marshal(schema)
	return &pulumirpc.GetSchemaResponse{Schema: string(out)}, err
}

func (*server) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (*server) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (*server) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{SupportsPreview: true, AcceptSecrets: true}, nil
}

func (*server) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	kind := resource.URN(req.GetUrn()).Type()
	if kind != localCommand && kind != remoteCommand {
		return nil, fmt.Errorf("%s is not served by agentplane's pulumi-resource-command (it serves %s and %s)", kind, localCommand, remoteCommand)
	}
	news, err := plugin.UnmarshalProperties(req.GetNews(), opts)
	if err != nil {
		return nil, err
	}
	var failures []*pulumirpc.CheckFailure
	fail := func(property, reason string) {
		failures = append(failures, &pulumirpc.CheckFailure{Property: property, Reason: reason})
	}
	if kind == localCommand {
		for _, k := range []resource.PropertyKey{"assetPaths", "archivePaths"} {
			if v, ok := news[k]; ok && !v.IsNull() {
				fail(string(k), "not served by agentplane's pulumi-resource-command")
			}
		}
	} else {
		conn, ok := news["connection"]
		if !ok || conn.IsNull() {
			fail("connection", "missing required property 'connection'")
		} else if c := plain(conn); c.IsObject() {
			if h := c.ObjectValue()["host"]; !h.IsComputed() && !(h.IsString() && h.StringValue() != "") {
				fail("connection.host", "missing required property 'host'")
			}
		}
	}
	if env := plain(news["environment"]); env.IsObject() {
		for k := range env.ObjectValue() {
			if !envName.MatchString(string(k)) {
				fail("environment."+string(k), "not a valid environment variable name")
			}
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
	out, err := run(ctx, req.GetUrn(), news, "create", nil)
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
	out, err := run(ctx, req.GetUrn(), news, script, olds)
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
	_, err = run(ctx, req.GetUrn(), olds, "delete", olds)
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

// plain is a value without its secret wrapping.
func plain(v resource.PropertyValue) resource.PropertyValue {
	for v.IsSecret() {
		v = v.SecretValue().Element
	}
	return v
}

func str(m resource.PropertyMap, k resource.PropertyKey) string {
	if v := plain(m[k]); v.IsString() {
		return v.StringValue()
	}
	return ""
}

func num(m resource.PropertyMap, k resource.PropertyKey, otherwise int) int {
	if v := plain(m[k]); v.IsNumber() {
		return int(v.NumberValue())
	}
	return otherwise
}

// environment is the command's extra variables, previous outputs included when asked (as upstream).
func environment(in resource.PropertyMap, prev resource.PropertyMap) []string {
	var env []string
	if v := plain(in["environment"]); v.IsObject() {
		for k, e := range v.ObjectValue() {
			if e = plain(e); e.IsString() {
				env = append(env, string(k)+"="+e.StringValue())
			}
		}
	}
	if v := plain(in["addPreviousOutputInEnv"]); prev != nil && !(v.IsBool() && !v.BoolValue()) {
		env = append(env, "PULUMI_COMMAND_STDOUT="+str(prev, "stdout"), "PULUMI_COMMAND_STDERR="+str(prev, "stderr"))
	}
	sort.Strings(env)
	return env
}

// run executes the script under key (create, update or delete) where the resource's type says.
func run(ctx context.Context, urn string, in resource.PropertyMap, key resource.PropertyKey, prev resource.PropertyMap) (*output, error) {
	script := str(in, key)
	if script == "" {
		return &output{}, nil
	}
	var out *output
	var err error
	if resource.URN(urn).Type() == remoteCommand {
		out, err = runRemote(ctx, plain(in["connection"]), script, environment(in, prev), str(in, "stdin"))
	} else {
		out, err = runLocal(ctx, in, script, environment(in, prev))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return out, nil
}
