import sys; sys.path.insert(0,'tests/unit')
import numpy as np, torch, loopopt
import polybench_py as pb
ni,nj,nk,nl = 800,900,1100,1200
d='cuda'
args=[1.5,1.2,torch.zeros((ni,nj),device=d),torch.rand((ni,nk),device=d),torch.rand((nk,nj),device=d),torch.rand((nj,nl),device=d),torch.rand((ni,nl),device=d)]
k = loopopt.kernel(pb.two_mm)
k(*args, target="gpu")
torch.cuda.synchronize()
k(*args, target="gpu")
torch.cuda.synchronize()
