package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// userHZ is the unit of the CPU times in /proc/PID/stat and /proc/stat
// (USER_HZ, 100 on every Linux architecture the bench runs on).
const userHZ = 100

// processTree returns root and all its descendants (nginx's master and
// workers, for example), found through the ppid field of /proc/*/stat.
func processTree(root int) []int {
	if root <= 0 {
		return nil
	}
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := statFields(pid); err == nil && len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// statFields returns the fields of /proc/PID/stat after the command name:
// f[0] is the state (field 3 of proc(5)), f[1] the ppid, f[11] utime,
// f[12] stime.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// cpuTicks is the user+system CPU time of pids, in USER_HZ ticks.
func cpuTicks(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		f, err := statFields(pid)
		if err != nil || len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		sum += u + s
	}
	return sum
}

// rssKiB is the summed VmRSS of pids.
func rssKiB(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		sum += statusKiB(pid, "VmRSS:")
	}
	return sum
}

func statusKiB(pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	return 0
}

// fdCount is the number of open descriptors of pids, by kind.
type fdCount struct {
	Total, Sockets, Pipes, Other int
}

func countFDs(pids []int) fdCount {
	var c fdCount
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			link, _ := os.Readlink(filepath.Join(dir, e.Name()))
			c.Total++
			switch {
			case strings.HasPrefix(link, "socket:"):
				c.Sockets++
			case strings.HasPrefix(link, "pipe:"):
				c.Pipes++
			default:
				c.Other++
			}
		}
	}
	return c
}

// machineTicks returns the busy and total CPU ticks of the whole machine
// (first line of /proc/stat; idle and iowait count as not busy).
func machineTicks() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, s := range f[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		if i >= 8 { // guest and guest_nice are already inside user and nice
			break
		}
		total += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total
}
