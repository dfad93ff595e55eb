// Command pulumi-resource-kubernetes stands in for the upstream Pulumi Kubernetes provider, whose Go
// module the offline Go module proxy refuses (403 for every version of
// github.com/pulumi/pulumi-kubernetes/provider/v4). It serves the resource types agentplane's two
// Pulumi programs declare through @pulumi/kubernetes (the computer stacks in
// src/provisioning/providers/kubernetes and the deploy program in src/deploy) and nothing else:
// each object is written with server-side apply, read back, and awaited the way the upstream
// provider does for the kinds that matter (Deployment and StatefulSet ready, Job complete, claim
// bound, namespace active; `pulumi.com/skipAwait: "true"` skips it). Replacement rules, auto-naming
// (`<name>-<8 random characters>`, annotation pulumi.com/autonamed) and renderYamlToDirectory follow
// upstream too. It talks plain HTTPS to the API server (kubeconfig: token, client certificate, CA).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"
)

var version = "0.0.0-dev"

const (
	fieldManager       = "pulumi-kubernetes"
	annotationAutoname = "pulumi.com/autonamed"
	annotationSkip     = "pulumi.com/skipAwait"
	defaultTimeout     = 10 * time.Minute
)

var opts = plugin.MarshalOptions{KeepUnknowns: true, SkipNulls: true}

// kind is one served resource type: where it lives in the API and which input paths force a replacement.
type kind struct {
	group, version, kind, plural string
	namespaced                   bool
	// Paths (dot-separated) whose change the API server refuses, so the object is replaced.
	replaceOn []string
}

var kinds = map[string]kind{}

func init() {
	for _, k := range []kind{
		{"", "v1", "Namespace", "namespaces", false, nil},
		{"", "v1", "Secret", "secrets", true, []string{"type", "data", "stringData", "immutable"}},
		{"", "v1", "ConfigMap", "configmaps", true, []string{"data", "binaryData", "immutable"}},
		{"", "v1", "ServiceAccount", "serviceaccounts", true, nil},
		{"", "v1", "Service", "services", true, []string{"spec.clusterIP", "spec.clusterIPs"}},
		{"", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true,
			[]string{"spec.accessModes", "spec.storageClassName", "spec.selector", "spec.volumeName", "spec.volumeMode", "spec.dataSource"}},
		{"apps", "v1", "Deployment", "deployments", true, []string{"spec.selector"}},
		{"apps", "v1", "StatefulSet", "statefulsets", true,
			[]string{"spec.selector", "spec.serviceName", "spec.volumeClaimTemplates", "spec.podManagementPolicy"}},
		{"batch", "v1", "Job", "jobs", true, []string{"spec.template", "spec.selector", "spec.completions", "spec.completionMode"}},
		{"rbac.authorization.k8s.io", "v1", "Role", "roles", true, nil},
		{"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, []string{"roleRef"}},
		{"networking.k8s.io", "v1", "Ingress", "ingresses", true, nil},
		{"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, nil},
		{"policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, nil},
	} {
		group := k.group
		if group == "" {
			group = "core"
		}
		kinds[fmt.Sprintf("kubernetes:%s/%s:%s", group, k.version, k.kind)] = k
	}
}

func (k kind) apiVersion() string {
	if k.group == "" {
		return k.version
	}
	return k.group + "/" + k.version
}

// collection is the REST path of the kind's objects in a namespace.
func (k kind) collection(ns string) string {
	p := "/api/" + k.version
	if k.group != "" {
		p = "/apis/" + k.group + "/" + k.version
	}
	if k.namespaced {
		p += "/namespaces/" + url.PathEscape(ns)
	}
	return p + "/" + k.plural
}

type server struct {
	pulumirpc.UnimplementedResourceProviderServer
	mu        sync.Mutex
	cluster   *cluster
	configErr error
	renderDir string
}

func main() {
	err := provider.Main("kubernetes", func(*provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
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
	return &pulumirpc.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":"kubernetes","version":%q}`, version)}, nil
}

func (*server) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (*server) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, err := plugin.UnmarshalProperties(req.GetOldInputs(), opts)
	if err != nil {
		return nil, err
	}
	news, err := plugin.UnmarshalProperties(req.GetNews(), opts)
	if err != nil {
		return nil, err
	}
	// Never a replacement: a kubeconfig moved to another path (or in-cluster credentials instead of
	// one) must not delete and recreate every object, computers' home volumes included.
	changes := pulumirpc.DiffResponse_DIFF_NONE
	if !olds.DeepEquals(news) {
		changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	return &pulumirpc.DiffResponse{Changes: changes}, nil
}

func (s *server) Configure(_ context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	cfg := map[string]string{}
	for k, v := range req.GetVariables() {
		cfg[strings.TrimPrefix(k, "kubernetes:config:")] = v
	}
	if args := req.GetArgs(); args != nil {
		props, err := plugin.UnmarshalProperties(args, opts)
		if err != nil {
			return nil, err
		}
		for k, v := range props {
			if v.IsString() {
				cfg[string(k)] = v.StringValue()
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renderDir = cfg["renderYamlToDirectory"]
	if s.renderDir == "" {
		s.cluster, s.configErr = loadCluster(cfg["kubeconfig"], cfg["context"], cfg["cluster"], cfg["namespace"])
	}
	return &pulumirpc.ConfigureResponse{SupportsPreview: true}, nil
}

func (s *server) client() (*cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configErr != nil {
		return nil, s.configErr
	}
	if s.cluster == nil {
		return nil, errors.New("kubernetes provider is not configured")
	}
	return s.cluster, nil
}

func kindOf(urn string) (kind, error) {
	t := string(resource.URN(urn).Type())
	k, ok := kinds[t]
	if !ok {
		return kind{}, fmt.Errorf("%s is not supported by agentplane's pulumi-resource-kubernetes (scripts/pulumi-resource-kubernetes serves only the kinds its programs use)", t)
	}
	return k, nil
}

// Check names an unnamed object as upstream does: the old auto-generated name while there is one,
// else `<resource name>-<8 random characters>`, marked with the pulumi.com/autonamed annotation.
func (s *server) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	news, err := plugin.UnmarshalProperties(req.GetNews(), opts)
	if err != nil {
		return nil, err
	}
	olds, err := plugin.UnmarshalProperties(req.GetOlds(), opts)
	if err != nil {
		return nil, err
	}
	var failures []*pulumirpc.CheckFailure
	if v := news["apiVersion"]; v.IsString() && v.StringValue() != k.apiVersion() {
		failures = append(failures, &pulumirpc.CheckFailure{Property: "apiVersion", Reason: "must be " + k.apiVersion()})
	}
	news["apiVersion"] = resource.NewStringProperty(k.apiVersion())
	news["kind"] = resource.NewStringProperty(k.kind)
	meta := resource.PropertyMap{}
	if m := news["metadata"]; m.IsObject() {
		meta = m.ObjectValue().Copy()
	}
	if n := meta["name"]; n.IsNull() || (n.IsString() && n.StringValue() == "") {
		name := ""
		if oldMeta := olds["metadata"]; oldMeta.IsObject() && autonamed(oldMeta.ObjectValue()) {
			if on := oldMeta.ObjectValue()["name"]; on.IsString() {
				name = on.StringValue()
			}
		}
		if name == "" {
			name = resource.URN(req.GetUrn()).Name() + "-" + randomSuffix()
		}
		meta["name"] = resource.NewStringProperty(name)
		annotations := resource.PropertyMap{}
		if a := meta["annotations"]; a.IsObject() {
			annotations = a.ObjectValue().Copy()
		}
		annotations[annotationAutoname] = resource.NewStringProperty("true")
		meta["annotations"] = resource.NewObjectProperty(annotations)
	}
	news["metadata"] = resource.NewObjectProperty(meta)
	inputs, err := plugin.MarshalProperties(news, opts)
	return &pulumirpc.CheckResponse{Inputs: inputs, Failures: failures}, err
}

func autonamed(meta resource.PropertyMap) bool {
	a := meta["annotations"]
	if !a.IsObject() {
		return false
	}
	v := a.ObjectValue()[annotationAutoname]
	return v.IsString() && v.StringValue() == "true"
}

func randomSuffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, 8)
	for i := range out {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		out[i] = alphabet[n.Int64()]
	}
	return string(out)
}

// Diff compares the old and new inputs; a changed name, namespace or immutable field replaces the
// object, deleting it first unless it is auto-named (the replacement then has a name of its own).
func (s *server) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
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
	oldObj, newObj := olds.Mappable(), news.Mappable()
	var diffs, replaces []string
	keys := map[string]bool{}
	for key := range oldObj {
		keys[key] = true
	}
	for key := range newObj {
		keys[key] = true
	}
	for key := range keys {
		if !reflect.DeepEqual(oldObj[key], newObj[key]) {
			diffs = append(diffs, key)
		}
	}
	for _, p := range append([]string{"metadata.name", "metadata.namespace"}, k.replaceOn...) {
		ov, nv := at(oldObj, p), at(newObj, p)
		if !reflect.DeepEqual(ov, nv) && !(ov == nil && isEmpty(nv)) {
			replaces = append(replaces, p)
		}
	}
	sort.Strings(diffs)
	changes := pulumirpc.DiffResponse_DIFF_NONE
	if len(diffs) > 0 {
		changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	newMeta, _ := newObj["metadata"].(map[string]any)
	ann, _ := newMeta["annotations"].(map[string]any)
	isAutonamed := ann[annotationAutoname] == "true"
	return &pulumirpc.DiffResponse{
		Changes:             changes,
		Diffs:               diffs,
		Replaces:            replaces,
		DeleteBeforeReplace: len(replaces) > 0 && !isAutonamed,
	}, nil
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func at(obj map[string]any, path string) any {
	var cur any = obj
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func (s *server) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	id, props, err := s.applyInputs(ctx, req.GetUrn(), req.GetProperties(), req.GetPreview(), req.GetTimeout())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: props}, nil
}

func (s *server) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	_, props, err := s.applyInputs(ctx, req.GetUrn(), req.GetNews(), req.GetPreview(), req.GetTimeout())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: props}, nil
}

// applyInputs is Create and Update alike: one server-side apply of the resource's inputs. A preview,
// or inputs still unknown, answers the inputs as they are (no id) and touches nothing.
func (s *server) applyInputs(ctx context.Context, urn string, inputs *structpb.Struct, preview bool, timeout float64) (string, *structpb.Struct, error) {
	k, err := kindOf(urn)
	if err != nil {
		return "", nil, err
	}
	news, err := plugin.UnmarshalProperties(inputs, opts)
	if err != nil {
		return "", nil, err
	}
	if preview || news.ContainsUnknowns() {
		props, err := plugin.MarshalProperties(news, opts)
		return "", props, err
	}
	id, live, err := s.apply(ctx, k, news, timeout)
	if err != nil {
		return "", nil, failed(id, live, err)
	}
	props, err := plugin.MarshalProperties(live, opts)
	return id, props, err
}

func failed(id string, live resource.PropertyMap, err error) error {
	if id == "" || live == nil {
		return err
	}
	props, merr := plugin.MarshalProperties(live, opts)
	if merr != nil {
		return err
	}
	st, derr := status.New(codes.Unknown, err.Error()).WithDetails(&pulumirpc.ErrorResourceInitFailed{
		Id: id, Properties: props, Reasons: []string{err.Error()},
	})
	if derr != nil {
		return err
	}
	return st.Err()
}

// apply writes the object with server-side apply (so a create interrupted earlier is adopted, not
// refused) and waits until it is ready. It returns the object as the API server has it.
func (s *server) apply(ctx context.Context, k kind, news resource.PropertyMap, timeoutSeconds float64) (string, resource.PropertyMap, error) {
	obj := news.Mappable()
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if s.renderDir != "" {
		return s.render(k, obj, name)
	}
	c, err := s.client()
	if err != nil {
		return "", nil, err
	}
	ns := ""
	if k.namespaced {
		ns, _ = meta["namespace"].(string)
		if ns == "" {
			ns = c.namespace
			meta["namespace"] = ns
		}
	}
	id := name
	if k.namespaced {
		id = ns + "/" + name
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return "", nil, err
	}
	path := k.collection(ns) + "/" + url.PathEscape(name) + "?fieldManager=" + fieldManager + "&force=true"
	var live map[string]any
	if err := c.do(ctx, http.MethodPatch, path, "application/apply-patch+yaml", body, &live); err != nil {
		return "", nil, fmt.Errorf("%s %s: %w", k.kind, id, err)
	}
	if skipAwait(meta) {
		return id, state(live), nil
	}
	deadline := defaultTimeout
	if timeoutSeconds > 0 {
		deadline = time.Duration(timeoutSeconds * float64(time.Second))
	}
	live, err = c.await(ctx, k, ns, name, deadline)
	return id, state(live), err
}

func skipAwait(meta map[string]any) bool {
	ann, _ := meta["annotations"].(map[string]any)
	return ann[annotationSkip] == "true"
}

// state is what the stack keeps of a live object: all of it but the server's bookkeeping.
func state(live map[string]any) resource.PropertyMap {
	if live == nil {
		return nil
	}
	if meta, ok := live["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
	}
	return resource.NewPropertyMapFromMap(live)
}

// render writes the object to renderYamlToDirectory as upstream does, touching no cluster.
func (s *server) render(k kind, obj map[string]any, name string) (string, resource.PropertyMap, error) {
	file := s.renderFile(k, obj, name)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", nil, err
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		return "", nil, err
	}
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	id := name
	if ns != "" {
		id = ns + "/" + name
	}
	return id, resource.NewPropertyMapFromMap(obj), nil
}

func (s *server) renderFile(k kind, obj map[string]any, name string) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	base := strings.ToLower(fmt.Sprintf("%s-%s-%s-%s.yaml", strings.ReplaceAll(k.apiVersion(), "/", "_"), k.kind, ns, name))
	return filepath.Join(s.renderDir, "1-manifest", base)
}

func (s *server) Read(ctx context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	if s.renderDir != "" {
		return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
	}
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	ns, name := splitID(k, req.GetId())
	var live map[string]any
	err = c.do(ctx, http.MethodGet, k.collection(ns)+"/"+url.PathEscape(name), "", nil, &live)
	if isNotFound(err) {
		return &pulumirpc.ReadResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	props, err := plugin.MarshalProperties(state(live), opts)
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: props, Inputs: req.GetInputs()}, err
}

func splitID(k kind, id string) (string, string) {
	if k.namespaced {
		if ns, name, ok := strings.Cut(id, "/"); ok {
			return ns, name
		}
	}
	return "", id
}

// Delete removes the object (its dependents in the background) and waits until it is gone.
func (s *server) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	olds, err := plugin.UnmarshalProperties(req.GetProperties(), opts)
	if err != nil {
		return nil, err
	}
	ns, name := splitID(k, req.GetId())
	if s.renderDir != "" {
		obj := olds.Mappable()
		_ = os.Remove(s.renderFile(k, obj, name))
		return &emptypb.Empty{}, nil
	}
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	path := k.collection(ns) + "/" + url.PathEscape(name)
	body := []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`)
	err = c.do(ctx, http.MethodDelete, path, "application/json", body, nil)
	if isNotFound(err) {
		return &emptypb.Empty{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deleting %s %s: %w", k.kind, req.GetId(), err)
	}
	meta, _ := olds.Mappable()["metadata"].(map[string]any)
	if skipAwait(meta) {
		return &emptypb.Empty{}, nil
	}
	deadline := defaultTimeout
	if t := req.GetTimeout(); t > 0 {
		deadline = time.Duration(t * float64(time.Second))
	}
	err = poll(ctx, deadline, func() (bool, string, error) {
		err := c.do(ctx, http.MethodGet, path, "", nil, nil)
		if isNotFound(err) {
			return true, "", nil
		}
		return false, "still exists", err
	})
	if err != nil {
		return nil, fmt.Errorf("deleting %s %s: %w", k.kind, req.GetId(), err)
	}
	return &emptypb.Empty{}, nil
}

// await polls the object until the kind's readiness holds, as the upstream provider's await logic.
func (c *cluster) await(ctx context.Context, k kind, ns, name string, timeout time.Duration) (map[string]any, error) {
	path := k.collection(ns) + "/" + url.PathEscape(name)
	var live map[string]any
	err := poll(ctx, timeout, func() (bool, string, error) {
		live = nil
		if err := c.do(ctx, http.MethodGet, path, "", nil, &live); err != nil {
			return false, "", err
		}
		ok, why := ready(k.kind, live)
		if why == "failed" {
			return false, why, permanentError{fmt.Errorf("%s failed: %v", k.kind, at(live, "status.conditions"))}
		}
		return ok, why, nil
	})
	if err != nil {
		return live, fmt.Errorf("%s %s/%s did not become ready: %w", k.kind, ns, name, err)
	}
	return live, nil
}

func poll(ctx context.Context, timeout time.Duration, check func() (bool, string, error)) error {
	end := time.Now().Add(timeout)
	wait := 100 * time.Millisecond
	for {
		ok, why, err := check()
		if ok {
			return nil
		}
		if err != nil && !isTransient(err) {
			return err
		}
		if time.Now().After(end) {
			if err != nil {
				return err
			}
			return fmt.Errorf("timed out after %s: %s", timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < time.Second {
			wait += 100 * time.Millisecond
		}
	}
}

func num(obj map[string]any, path string) int64 {
	switch v := at(obj, path).(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}

func condition(obj map[string]any, typ string) (string, string) {
	conds, _ := at(obj, "status.conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// ready says whether a live object is done, and if not, what it waits for. A failed Job is an error.
func ready(kindName string, obj map[string]any) (bool, string) {
	generation, observed := num(obj, "metadata.generation"), num(obj, "status.observedGeneration")
	switch kindName {
	case "Deployment":
		want := int64(1)
		if v := at(obj, "spec.replicas"); v != nil {
			want = num(obj, "spec.replicas")
		}
		if observed < generation {
			return false, "the controller has not seen the newest spec"
		}
		if num(obj, "status.updatedReplicas") != want || num(obj, "status.readyReplicas") != want ||
			num(obj, "status.availableReplicas") != want || num(obj, "status.replicas") != want {
			return false, fmt.Sprintf("%d of %d replicas updated and available", num(obj, "status.availableReplicas"), want)
		}
		if want > 0 {
			if _, reason := condition(obj, "Progressing"); reason != "NewReplicaSetAvailable" {
				return false, "the new ReplicaSet is not available yet"
			}
		}
		return true, ""
	case "StatefulSet":
		want := int64(1)
		if v := at(obj, "spec.replicas"); v != nil {
			want = num(obj, "spec.replicas")
		}
		if observed < generation {
			return false, "the controller has not seen the newest spec"
		}
		if num(obj, "status.replicas") != want || num(obj, "status.readyReplicas") != want {
			return false, fmt.Sprintf("%d of %d replicas ready", num(obj, "status.readyReplicas"), want)
		}
		if want > 0 && (num(obj, "status.updatedReplicas") != want || at(obj, "status.currentRevision") != at(obj, "status.updateRevision")) {
			return false, "pods are not on the newest revision yet"
		}
		return true, ""
	case "Job":
		if s, _ := condition(obj, "Failed"); s == "True" {
			return false, "failed"
		}
		if s, _ := condition(obj, "Complete"); s == "True" {
			return true, ""
		}
		return false, "not complete"
	case "PersistentVolumeClaim":
		if at(obj, "status.phase") == "Bound" {
			return true, ""
		}
		return false, "not bound"
	case "Namespace":
		if at(obj, "status.phase") == "Active" {
			return true, ""
		}
		return false, "not active"
	}
	return true, ""
}

// ---- the API server connection, from a kubeconfig ----

type cluster struct {
	server    string
	token     string
	namespace string
	http      *http.Client
}

type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster   string `yaml:"cluster"`
			User      string `yaml:"user"`
			Namespace string `yaml:"namespace"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

const inClusterDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// loadCluster reads the kubeconfig the provider was given (contents or a path), else the first file
// of KUBECONFIG, else the pod's service account, else ~/.kube/config.
func loadCluster(kc, contextName, clusterName, namespace string) (*cluster, error) {
	var raw []byte
	dir := ""
	switch {
	case strings.Contains(kc, "\n") || strings.HasPrefix(strings.TrimSpace(kc), "{"):
		raw = []byte(kc)
	case kc != "":
		for _, p := range filepath.SplitList(kc) {
			if b, err := os.ReadFile(p); err == nil {
				raw, dir = b, filepath.Dir(p)
				break
			}
		}
		if raw == nil {
			return nil, fmt.Errorf("cannot read the kubeconfig %s", kc)
		}
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		return inCluster(namespace)
	default:
		home, _ := os.UserHomeDir()
		p := filepath.Join(home, ".kube", "config")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, errors.New("no kubeconfig: set KUBECONFIG or the provider's kubeconfig")
		}
		raw, dir = b, filepath.Dir(p)
	}
	var cfg kubeconfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if contextName == "" {
		contextName = cfg.CurrentContext
	}
	var ctxCluster, ctxUser, ctxNamespace string
	found := false
	for _, c := range cfg.Contexts {
		if c.Name == contextName {
			ctxCluster, ctxUser, ctxNamespace, found = c.Context.Cluster, c.Context.User, c.Context.Namespace, true
		}
	}
	if !found {
		return nil, fmt.Errorf("the kubeconfig has no context %q", contextName)
	}
	if clusterName != "" {
		ctxCluster = clusterName
	}
	rel := func(p string) string {
		if p != "" && !filepath.IsAbs(p) && dir != "" {
			return filepath.Join(dir, p)
		}
		return p
	}
	data := func(inline, file string) ([]byte, error) {
		if inline != "" {
			return base64.StdEncoding.DecodeString(inline)
		}
		if file != "" {
			return os.ReadFile(rel(file))
		}
		return nil, nil
	}
	c := &cluster{}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, cl := range cfg.Clusters {
		if cl.Name != ctxCluster {
			continue
		}
		c.server = strings.TrimSuffix(cl.Cluster.Server, "/")
		ca, err := data(cl.Cluster.CertificateAuthorityData, cl.Cluster.CertificateAuthority)
		if err != nil {
			return nil, fmt.Errorf("the cluster's CA: %w", err)
		}
		if len(ca) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, errors.New("the cluster's CA holds no PEM certificate")
			}
			tlsConfig.RootCAs = pool
		}
		tlsConfig.InsecureSkipVerify = cl.Cluster.InsecureSkipTLSVerify
	}
	if c.server == "" {
		return nil, fmt.Errorf("the kubeconfig has no cluster %q with a server", ctxCluster)
	}
	for _, u := range cfg.Users {
		if u.Name != ctxUser {
			continue
		}
		c.token = u.User.Token
		if c.token == "" && u.User.TokenFile != "" {
			b, err := os.ReadFile(rel(u.User.TokenFile))
			if err != nil {
				return nil, err
			}
			c.token = strings.TrimSpace(string(b))
		}
		cert, err := data(u.User.ClientCertificateData, u.User.ClientCertificate)
		if err != nil {
			return nil, err
		}
		key, err := data(u.User.ClientKeyData, u.User.ClientKey)
		if err != nil {
			return nil, err
		}
		if len(cert) > 0 && len(key) > 0 {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("the user's client certificate: %w", err)
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
	}
	c.namespace = firstNonEmpty(namespace, ctxNamespace, "default")
	c.http = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}, Timeout: 60 * time.Second}
	return c, nil
}

func inCluster(namespace string) (*cluster, error) {
	token, err := os.ReadFile(filepath.Join(inClusterDir, "token"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(inClusterDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	podNS, _ := os.ReadFile(filepath.Join(inClusterDir, "namespace"))
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return &cluster{
		server:    "https://" + host + ":" + port,
		token:     strings.TrimSpace(string(token)),
		namespace: firstNonEmpty(namespace, strings.TrimSpace(string(podNS)), "default"),
		http:      &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 60 * time.Second},
	}, nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// permanentError ends an await at once (a failed Job).
type permanentError struct{ error }

type apiError struct {
	code    int
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.code, e.message) }

func isNotFound(err error) bool {
	var e *apiError
	return errors.As(err, &e) && e.code == http.StatusNotFound
}

// isTransient: worth another try while awaiting (the API server restarting, a conflict).
func isTransient(err error) bool {
	var p permanentError
	if errors.As(err, &p) {
		return false
	}
	var e *apiError
	if errors.As(err, &e) {
		return e.code == http.StatusConflict || e.code == http.StatusTooManyRequests || e.code >= 500
	}
	return true
}

func (c *cluster) do(ctx context.Context, method, path, contentType string, body []byte, out *map[string]any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, r)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "pulumi-resource-kubernetes/"+version+" (agentplane)")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &st) != nil || st.Message == "" {
			st.Message = strings.TrimSpace(string(b))
		}
		return &apiError{res.StatusCode, st.Message}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
