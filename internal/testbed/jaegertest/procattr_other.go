//go:build !linux

package jaegertest

import "syscall"

// childProcAttr: only Linux can tie a child's life to its parent; elsewhere
// the test cleanup is the only safety net.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
