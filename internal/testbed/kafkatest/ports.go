package kafkatest

import (
	"fmt"
	"net"
)

// freePorts asks the kernel for n distinct free ports on 127.0.0.1. All
// listeners are held until every port is picked, so the n differ; another
// process may still take one before the JVM binds it, which startCluster
// detects and retries.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
