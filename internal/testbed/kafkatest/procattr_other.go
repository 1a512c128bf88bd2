//go:build !linux

package kafkatest

import "syscall"

// childProcAttr: only Linux can tie a child's life to its parent; elsewhere
// RunMain's signal handling and the stale-dir sweep are the safety net.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
