//go:build ignore

// Writes the two files upstream's cmd/pulumi-resource-kubernetes/main.go embeds, as upstream's
// generate.go does from the module's own schema.json and terraform-mapping.json: the schema with its
// version set to the one @pulumi/kubernetes asks for, both compacted. Run by scripts/pulumi-toolchain.sh
// in the wrapper module it builds the provider in: go run pulumi-kubernetes-embed.go <module cmd dir> <version>
package main

import (
	"bytes"
	"encoding/json"
	"os"
)

func compact(in, out string, version string) {
	raw, err := os.ReadFile(in)
	if err == nil && version != "" {
		var schema map[string]any
		if err = json.Unmarshal(raw, &schema); err == nil {
			schema["version"] = version
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			err, raw = enc.Encode(schema), b.Bytes()
		}
	}
	var b bytes.Buffer
	if err == nil {
		err = json.Compact(&b, raw)
	}
	if err == nil {
		err = os.WriteFile(out, b.Bytes(), 0o644)
	}
	if err != nil {
		panic(err)
	}
}

func main() {
	compact(os.Args[1]+"/schema.json", "schema-embed.json", os.Args[2])
	compact(os.Args[1]+"/terraform-mapping.json", "terraform-mapping-embed.json", "")
}
