// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain) built from the pinned
// module version, for the local control plane used by make run and the envtest suites.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
