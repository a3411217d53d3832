/* A thread that calls execve: de_thread kills the leader and the thread takes
 * its pid. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *run(void *arg)
{
	(void)arg;
	char *argv[] = {"true", NULL};
	execv("/bin/true", argv);
	perror("execv");
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, run, NULL);
	pthread_join(t, NULL);
	return 1;
}
