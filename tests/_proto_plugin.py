import time, os
import icetide_local.standins.glue as g
import icetide_local.local_stack as ls
orig=g.StandInJobRun._run
def _run(self, runner):
    t=time.monotonic(); 
    try: return orig(self, runner)
    finally: open('/tmp/jobs.txt','a').write(f"job {time.monotonic()-t:.2f}\n")
g.StandInJobRun._run=_run
oc=ls.LocalStack.run_cycle
def rc(self,*a,**k):
    t=time.monotonic()
    try: return oc(self,*a,**k)
    finally: open('/tmp/jobs.txt','a').write(f"cycle {time.monotonic()-t:.2f}\n")
ls.LocalStack.run_cycle=rc
