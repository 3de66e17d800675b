// Package mapappend appends to a file through a shared memory mapping of its end, so that
// an append is a memory copy instead of a system call.
//
// A relay appends to each match's replay file every tick that has commands. As write
// calls those were about a tenth of its CPU: the call itself, and the Go runtime's
// monitor thread (sysmon), which a system call made after an idle spell wakes and which
// then polls until the process is idle again. Copied into a MAP_SHARED mapping, the bytes
// are in the kernel's page cache as soon as the copy returns, exactly as after a write:
// another process reads them, and they survive a crash of this process (not of the
// machine: that needs fsync, which covers mapped pages too).
//
// Use New on an open file and its length, Write as with any io.Writer, and Finish when
// done appending.
//
// # The reserved tail
//
// A mapping cannot reach past the file's end, so the file is grown a window ahead of the
// writes (64 KiB; with fallocate where the file system has it, so a full disk is an error
// then, not at the copy). Until Finish cuts it off, the file ends in up to a window of
// zero bytes that were never written. A process killed before Finish leaves them, and one
// killed in the middle of a copy leaves part of that append in them. Each append's first
// byte is stored last, so such a file holds a zero where its last append starts, and its
// length is a multiple of Align: readers of these files take a zero where a record should
// start, in a file of such a length, as the file's cut end (the replay readers do).
//
// # Page faults
//
// A copy into a page that is not mapped writable takes a page fault, and a fault can
// block in the kernel (dirty-page throttling, a page under writeback) while its thread
// keeps the runtime's processor: with GOMAXPROCS 1 every goroutine waits. A write call
// that blocks hands the processor on instead. So each page is faulted in ahead of the
// copies, once, by a system call (madvise MADV_POPULATE_WRITE, Linux 5.14 on). What is
// left: when writeback has cleaned the page the appends are filling (the kernel writes
// dirty pages back after about 30 s), the next copy into it faults once, and that fault
// blocks only where a write call would have blocked too.
//
// # Faults and fallbacks
//
// A fault in the copy (the file was truncated under the mapping, or an I/O error) is
// recovered: the appender cuts the file back to the bytes it has appended and writes
// this and every later append with write calls, losing nothing. So does any failure to
// grow or map the file, and every platform other than Linux, where only write calls are
// used.
package mapappend
