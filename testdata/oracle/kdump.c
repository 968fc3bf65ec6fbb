// kdump ADDR LEN: copies LEN bytes of kernel memory at virtual address
// ADDR to standard output, read through /proc/kcore's program headers.
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	unsigned long addr, len;
	char *buf;
	int fd, i;

	if (argc != 3) {
		fprintf(stderr, "usage: kdump ADDR LEN\n");
		return 2;
	}
	addr = strtoul(argv[1], NULL, 0);
	len = strtoul(argv[2], NULL, 0);
	fd = open("/proc/kcore", O_RDONLY);
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) {
		perror("kdump: /proc/kcore");
		return 1;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (off_t)i * eh.e_phentsize) != sizeof(ph))
			break;
		if (ph.p_type != PT_LOAD || addr < ph.p_vaddr || addr + len > ph.p_vaddr + ph.p_memsz)
			continue;
		buf = malloc(len);
		if (!buf || pread(fd, buf, len, ph.p_offset + (addr - ph.p_vaddr)) != (ssize_t)len) {
			perror("kdump: read");
			return 1;
		}
		return write(1, buf, len) == (ssize_t)len ? 0 : 1;
	}
	fprintf(stderr, "kdump: %#lx+%#lx is in no segment of /proc/kcore\n", addr, len);
	return 1;
}
