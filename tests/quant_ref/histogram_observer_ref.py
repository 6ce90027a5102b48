# Plain-Python transcription of PyTorch 2.x HistogramObserver (forward, _adjust_min_max,
# _combine_histograms, _non_linear_param_search, _compute_quantization_error) and
# _calculate_qparams, float32 where PyTorch keeps float32 tensors. Prints the numbers
# tests/check_quant.c (test_quant_histogram_observer) expects: python3 histogram_observer_ref.py
# Independent re-implementation of torch.ao.quantization.HistogramObserver (2.x) in plain Python.
import struct, math
def f32(x): return struct.unpack('f', struct.pack('f', x))[0]
bins=2048; up=128; dst=256
def histc(x, mn, mx):
    h=[0.0]*bins
    if mn==mx: mn-=1; mx+=1
    for v in x:
        if v<mn or v>mx: continue
        p=int(f32(f32(f32(v-mn)/f32(mx-mn))*bins))
        if p>=bins: p=bins-1
        h[p]+=1
    return h
class H:
    def __init__(s): s.mn=math.inf; s.mx=-math.inf; s.h=[0.0]*bins
    def fwd(s,x):
        xmin=min(x); xmax=max(x)
        if (s.mn==math.inf and s.mx==-math.inf) or s.mn==s.mx:
            s.mn,s.mx=xmin,xmax; s.h=histc(x,xmin,xmax); return
        cmin=min(xmin,s.mn); cmax=max(xmax,s.mx)
        down=int(math.ceil(f32(f32(f32(cmax-cmin)*up)/f32(s.mx-s.mn))))
        e=f32(f32(f32(down*f32(s.mx-s.mn))/up)-f32(cmax-cmin))
        start=int(round(f32(f32(f32(f32(s.mn-cmin)*bins)*up)/f32(s.mx-s.mn))))
        cmax=f32(cmax+e)
        comb=histc(x,cmin,cmax)
        if cmin==s.mn and cmax==s.mx:
            comb=[a+b for a,b in zip(comb,s.h)]
        else:
            rng=[0.0]*(bins*down)
            for k in range(bins*up):
                i=k+start
                if 0<=i<len(rng): rng[i]=s.h[k//up]
            integ=[]; acc=0.0
            for i,v in enumerate(rng):
                acc+=v
                if (i+1)%down==0: integ.append(acc)
            sh=[0.0]+integ[:-1]
            comb=[comb[j]+(integ[j]-sh[j])/up for j in range(bins)]
        s.h=comb; s.mn=cmin; s.mx=cmax
    def err(s,b0,b1):
        bw=(s.mx-s.mn)/bins; dbw=bw*(b1-b0+1)/dst
        if dbw==0: return 0.0
        norm=0.0
        for i in range(bins):
            beg=(i-b0)*bw; end=beg+bw
            db=min(max(math.floor(beg/dbw),0),dst-1); de=min(max(math.floor(end/dbw),0),dst-1)
            dens=s.h[i]/bw
            g=lambda a,b: dens*(b**3-a**3)/3
            norm+=g(beg-(db+0.5)*dbw, dbw/2)
            norm+=(de-db-1)*g(-dbw/2,dbw/2)
            norm+=g(-dbw/2, end-(de*dbw+dbw/2))
        return norm
    def search(s):
        bw=f32(f32(s.mx-s.mn)/bins)
        total=sum(s.h); cs=[]; a=0
        for v in s.h: a+=v; cs.append(a)
        alpha=0.0; beta=1.0; st=0; en=bins-1; nmin=math.inf
        while alpha<beta:
            na=alpha+1e-5; nb=beta-1e-5
            l=st; r=en
            while l<en and cs[l]<na*total: l+=1
            while r>st and cs[r]>nb*total: r-=1
            ns,ne=st,en
            if l-st>en-r: ns=l; alpha=na
            else: ne=r; beta=nb
            if ns==st and ne==en: continue
            n=s.err(ns,ne)
            if n>nmin: break
            nmin=n; st,en=ns,ne
        return f32(s.mn+f32(bw*st)), f32(f32(s.mn+f32(bw*en))+bw), st, en
def qparams(mn,mx,qmin,qmax):
    mn=min(mn,0.0); mx=max(mx,0.0)
    sc=f32(f32(mx-mn)/f32(qmax-qmin)); sc=max(sc,f32(1.1920928955078125e-07))
    q=f32(mn/sc); r=round(q)  # python round = half even
    zp=min(max(qmin-r,qmin),qmax)
    return sc,zp
xs=[f32(8*((2*(((i*37)%1000)+0.5)/1000-1)**5)) for i in range(1000)]
h=H(); h.fwd([f32(v*0.5) for v in xs[:600]]); h.fwd(xs[600:]+[f32(9.5)])
nmin,nmax,st,en=h.search()
print("range",h.mn,h.mx,"bins",st,en,"new",repr(nmin),repr(nmax))
print("qparams reduce_range", qparams(nmin,nmax,0,127), "full", qparams(nmin,nmax,0,255))
