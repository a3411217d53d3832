#define _GNU_SOURCE
/* SysV semaphores as a program uses them: a SEM_UNDO operation undone when
 * the forked child exits, a semtimedop that times out, and a child asleep in
 * semop that its parent wakes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

union semun { int val; };

int main(void)
{
	int id = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
	if (id < 0)
		return 1;
	semctl(id, 0, SETVAL, (union semun){.val = 1});

	pid_t pid = fork();
	if (pid == 0) {
		struct sembuf take = {0, -1, SEM_UNDO};
		semop(id, &take, 1);
		_exit(0); /* the undo gives the unit back */
	}
	waitpid(pid, NULL, 0);
	printf("after undo: %d\n", semctl(id, 0, GETVAL));

	struct sembuf wait1 = {1, -1, 0};
	struct timespec ts = {0, 50 * 1000 * 1000};
	if (semtimedop(id, &wait1, 1, &ts) < 0)
		printf("semtimedop: %s\n", errno == EAGAIN ? "EAGAIN" : "other");

	pid = fork();
	if (pid == 0) {
		semop(id, &wait1, 1); /* sleeps until the parent posts */
		_exit(0);
	}
	struct timespec pause = {0, 50 * 1000 * 1000};
	nanosleep(&pause, NULL);
	struct sembuf post = {1, 1, 0};
	semop(id, &post, 1);
	int status;
	waitpid(pid, &status, 0);
	printf("child: %d\n", WEXITSTATUS(status));
	semctl(id, 0, IPC_RMID);
	return 0;
}
