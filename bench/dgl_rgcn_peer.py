"""DGL's distributed RGCN (entity classification) on gnn's typed data, for
bench/compare_dgl_rgcn.sh (never run by CI).

  dgl_rgcn_peer.py train --dataset OGB_DIR [gnn-train's flags]
      Standalone: one process, the whole graph in memory.
  dgl_rgcn_peer.py partition OGB_DIR NUM_PARTS OUT_DIR [metis|random]
      DGL's partition_graph of the same heterograph (balanced on the
      target type's training nodes and on edges).
  dgl_rgcn_peer.py train --part_config DGL_JSON --ip_config IP [flags]
      Distributed, with the DGL_* environment a launcher sets.
  dgl_rgcn_peer.py check OGB_DIR GNN_1PART_JSON
      Proves the graph DGL builds is the one gnn-partition wrote: every
      (relation, source, destination) edge, the features, labels and split.

The data is an OGB heterogeneous raw folder (`gnn-dataset --write_ogb`),
read here with pandas, and by gnn-partition with its own parser. Reverse
relations are added as gnn's --undirected adds them (dst, "rev-" + name,
src) for every stored relation, in the stored order.

The model is the one of DGL's examples/pytorch/rgcn/experimental/
entity_classify_dist.py, written from DGL's documented API:
  * DistEmbedLayer: a featured type goes through nn.Linear(width, hidden)
    (xavier_uniform_ weight); a featureless type has a learnable embedding
    of width hidden, initialised uniform(-1, 1) (init_emb), trained by a
    sparse Adam (standalone: dgl.nn.NodeEmbedding + dgl.optim.SparseAdam;
    distributed: dgl.distributed.DistEmbedding +
    dgl.distributed.optim.SparseAdam);
  * EntityClassify: dgl.nn.RelGraphConv(regularizer="basis") layers,
    hidden -> hidden (ReLU, dropout) ... -> classes (no activation, no
    dropout), self-loop, no layer norm;
  * the example's sampler: seeds mapped to homogeneous ids, each hop one
    neighbour sampling of the homogeneous graph, dgl.to_block, relation of
    every sampled edge from its id (map_to_per_etype; DGL 2's distributed
    sampler answers per relation, mapped back to homogeneous ids), input
    node types and per-type ids from theirs (map_to_per_ntype);
  * Adam on the dense parameters (DistributedDataParallel when distributed),
    the sparse optimizer on the embeddings, cross-entropy on the seeds.
Pinned (the example's ogbn-mag command, and gnn-train --model rgcn's
defaults): hidden 64, 2 layers, 2 bases, self-loop, dropout 0.5, lr 0.01,
sparse lr 0.06, batch 1024, fan-out 25,10 (input layer first, DGL's
NeighborSampler order; the seeds' hop takes the last).

Two choices made to match gnn-train --model rgcn, so that both systems
compute the same function (the example's own choices in brackets):
  * fan-out per relation: dgl.sampling.sample_etype_neighbors /
    dgl.distributed.sample_etype_neighbors, up to F in-edges of each
    relation per node [sample_neighbors: F in-edges over all relations];
  * the norm of an edge into node i of relation r is 1/|N_i^r| of the
    block, RGCN's c_{i,r} [gen_norm: 1 / the node's in-degree in the block].
Evaluation as the example and gnn: validation and test nodes with the
training fan-outs, every epoch; the reported test accuracy is the one at
the best validation epoch.

Prints one JSON line last: seeds/s (every rank's training seeds over the
slowest rank's training time, evaluation excluded), mean epoch time, test
accuracy at the best validation epoch.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

os.environ.setdefault("DGLBACKEND", "pytorch")


def load_ogb_hetero(folder):
    """The OGB heterogeneous raw folder as a dgl.heterograph, with gnn's
    reverse relations; feat / labels / masks on the labelled type."""
    import dgl
    import pandas as pd
    raw = os.path.join(folder, "raw")
    read = lambda p, **kw: pd.read_csv(p, header=None, **kw)
    dict_rows = read(os.path.join(raw, "num-node-dict.csv.gz")).values
    num_nodes = {str(t): int(n) for t, n in zip(dict_rows[0], dict_rows[1])}
    triplets = [tuple(map(str, r)) for r in read(os.path.join(raw, "triplet-type-list.csv.gz")).values]
    data = {}
    for s, r, d in triplets:
        e = read(os.path.join(raw, "relations", f"{s}___{r}___{d}", "edge.csv.gz"),
                 dtype=np.int64).values
        data[(s, r, d)] = (torch.from_numpy(e[:, 0].copy()), torch.from_numpy(e[:, 1].copy()))
    for s, r, d in triplets:
        src, dst = data[(s, r, d)]
        data[(d, "rev-" + r, s)] = (dst, src)
    hg = dgl.heterograph(data, num_nodes_dict=num_nodes)
    for t in num_nodes:
        p = os.path.join(raw, "node-feat", t, "node-feat.csv.gz")
        if os.path.exists(p):
            # round_trip: the correctly rounded double of each decimal, then float32.
            x = read(p, dtype=np.float64, float_precision="round_trip").values
            hg.nodes[t].data["feat"] = torch.from_numpy(x.astype(np.float32))
    has_label = read(os.path.join(raw, "nodetype-has-label.csv.gz")).values
    target = [str(t) for t, f in zip(has_label[0], has_label[1]) if str(f) == "True"][0]
    y = read(os.path.join(raw, "node-label", target, "node-label.csv.gz"), dtype=np.int64).values[:, 0]
    splits = os.listdir(os.path.join(folder, "split"))
    if len(splits) != 1:
        sys.exit(f"{folder}/split: expected one split folder, found {splits}")
    n = num_nodes[target]
    hg.nodes[target].data["labels"] = torch.from_numpy(y.copy())
    for name, key in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
        ids = read(os.path.join(folder, "split", splits[0], target, name + ".csv.gz"),
                   dtype=np.int64).values[:, 0]
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(ids)] = True
        hg.nodes[target].data[key] = mask
    return hg, target


def check(folder, gnn_json):
    """Every edge, feature row, label and mask of the DGL graph against
    gnn-partition's 1-partition arrays (a homogeneous CSC of in-edges with a
    relation per edge; node_map gives each type's new-id range, orig_nids
    the per-type original id of every new id)."""
    hg, target = load_ogb_hetero(folder)
    cfg = json.load(open(gnn_json))
    part = os.path.join(os.path.dirname(os.path.abspath(gnn_json)), "part0")
    arr = lambda n: np.load(os.path.join(part, n + ".npy"))
    indptr, indices, etype, orig = arr("indptr"), arr("indices"), arr("etype"), arr("orig_nids")
    rng = {t: r[0] for t, r in cfg["node_map"].items()}
    dst_new = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    rel_of = {v: k for k, v in cfg["etypes"].items()}
    got = {}
    for r in np.unique(etype):
        s_, r_, d_ = rel_of[int(r)].split(":")
        m = etype == r
        src, dst = indices[m], dst_new[m]
        assert ((src >= rng[s_][0]) & (src < rng[s_][1])).all()
        assert ((dst >= rng[d_][0]) & (dst < rng[d_][1])).all()
        got[(s_, r_, d_)] = np.sort(orig[src] * (1 << 32) + orig[dst])
    ok = set(got) == set(hg.canonical_etypes)
    for c in hg.canonical_etypes:
        s, d = (x.numpy() for x in hg.edges(etype=c))
        ok = ok and np.array_equal(np.sort(s * (1 << 32) + d), got.get(c))
    # gnn's rows of the target type, put in original per-type order.
    order = np.argsort(orig[rng[target][0]:rng[target][1]])
    def same(name, dgl_t):
        a = arr(f"{target}-{name}")[order]
        return a.tobytes() == dgl_t.numpy().astype(a.dtype).tobytes()
    res = {"edges": bool(ok), "feat": same("feat", hg.nodes[target].data["feat"]),
           "labels": same("label", hg.nodes[target].data["labels"])}
    for gname, dname in (("train_mask", "train_mask"), ("valid_mask", "val_mask"), ("test_mask", "test_mask")):
        res[dname] = same(gname, hg.nodes[target].data[dname])
    res["nodes"] = {t: hg.num_nodes(t) for t in hg.ntypes}
    res["edges_per_relation"] = {":".join(c): hg.num_edges(c) for c in hg.canonical_etypes}
    print(json.dumps(res))
    if not all(v for k, v in res.items() if isinstance(v, bool)):
        sys.exit("check: the graphs differ")


def partition(folder, num_parts, out_dir, method):
    import dgl
    hg, target = load_ogb_hetero(folder)
    start = time.time()
    dgl.distributed.partition_graph(
        hg, os.path.basename(os.path.normpath(folder)), num_parts, out_dir, part_method=method,
        balance_ntypes={target: hg.nodes[target].data["train_mask"]}, balance_edges=True)
    print(json.dumps({"dgl_partition_s": round(time.time() - start, 2),
                      "nodes": hg.num_nodes(), "edges": hg.num_edges()}))


class Standalone:
    """The whole graph in this process (dgl.to_homogeneous keeps edges
    grouped by relation, which sample_etype_neighbors needs)."""

    def __init__(self, a):
        import dgl
        hg, self.target = load_ogb_hetero(a.dataset)
        self.ntypes, self.etypes = hg.ntypes, hg.canonical_etypes
        self.g = dgl.to_homogeneous(hg)
        self.etype_offset = [0] + np.cumsum([hg.num_edges(c) for c in self.etypes]).tolist()
        self.type_start = [0] + np.cumsum([hg.num_nodes(t) for t in self.ntypes]).tolist()
        # In-edges of each node in edge-id (hence relation) order?
        ip, _, eid = self.g.adj_tensors("csc")
        d = eid[1:] - eid[:-1]
        first = torch.zeros(len(eid), dtype=torch.bool)
        first[ip[:-1][ip[:-1] < len(eid)]] = True
        self.etype_sorted = bool(((d > 0) | first[1:]).all())
        self.data = {t: hg.nodes[t].data for t in self.ntypes}
        self.rank, self.world = 0, 1
        self.split = {k: torch.nonzero(self.data[self.target][k]).squeeze(1)
                      for k in ("train_mask", "val_mask", "test_mask")}
        self.labels = self.data[self.target]["labels"]

    def to_homo(self, seeds):
        return seeds + self.type_start[self.ntypes.index(self.target)]

    def sample(self, nodes, fanout):
        import dgl
        f = torch.full((len(self.etypes),), fanout, dtype=torch.int64)
        fr = dgl.sampling.sample_etype_neighbors(self.g, nodes, self.etype_offset, f,
                                                 copy_ndata=False, copy_edata=True,
                                                 etype_sorted=self.etype_sorted)
        return fr, self.g.edata[dgl.ETYPE][fr.edata[dgl.EID]]

    def per_ntype(self, nids):
        import dgl
        return self.g.ndata[dgl.NTYPE][nids], self.g.ndata[dgl.NID][nids]

    def embedding(self, ntype, dim, init):
        import dgl
        # NodeEmbedding's init_func fills a tensor; DistEmbedding's makes one.
        return dgl.nn.NodeEmbedding(self.num_nodes(ntype), dim, "emb_" + ntype,
                                    lambda t: t.copy_(init(t.shape, t.dtype)))

    def keys(self, ntype):
        return list(self.data[ntype].keys())

    def num_nodes(self, ntype):
        i = self.ntypes.index(ntype)
        return self.type_start[i + 1] - self.type_start[i]

    def sparse_optimizer(self, embs, lr):
        import dgl
        return dgl.optim.SparseAdam(embs, lr=lr)

    def sum_over_ranks(self, values, op="sum"):
        return values

    def barrier(self):
        pass


class Distributed:
    """DistGraph: the example's partition book mappings and DistEmbedding."""

    def __init__(self, a):
        import dgl
        dgl.distributed.initialize(a.ip_config)
        torch.distributed.init_process_group("gloo")
        name = json.load(open(a.part_config))["graph_name"]
        g = self.g = dgl.distributed.DistGraph(name, part_config=a.part_config)
        self.gpb = g.get_partition_book()
        self.ntypes, self.etypes = g.ntypes, g.canonical_etypes
        self.target = [t for t in g.ntypes if "labels" in g.nodes[t].data][0]
        self.data = {t: g.nodes[t].data for t in g.ntypes}
        self.rank, self.world = g.rank(), torch.distributed.get_world_size()
        self.split = {k: dgl.distributed.node_split(self.data[self.target][k], self.gpb,
                                                    ntype=self.target, force_even=True)
                      for k in ("train_mask", "val_mask", "test_mask")}
        self.labels = self.data[self.target]["labels"]

    def to_homo(self, seeds):
        return self.gpb.map_to_homo_nid(seeds, self.target)

    def sample(self, nodes, fanout):
        import dgl
        fr = dgl.distributed.sample_etype_neighbors(self.g, nodes, fanout)
        if fr.is_homogeneous:  # (DGL < 2: homogeneous ids, as the example expects)
            return fr, self.gpb.map_to_per_etype(fr.edata[dgl.EID])[0]
        # DGL 2 gives the frontier per relation with per-type ids: back to
        # the homogeneous ids of the example's sampler.
        src, dst, rel = [], [], []
        for i, c in enumerate(self.etypes):
            if c not in fr.canonical_etypes:  # (only relations with sampled edges)
                continue
            u, v = fr.edges(etype=c)
            src.append(self.gpb.map_to_homo_nid(u, c[0]))
            dst.append(self.gpb.map_to_homo_nid(v, c[2]))
            rel.append(torch.full((len(u),), i, dtype=torch.int64))
        homo = dgl.graph((torch.cat(src), torch.cat(dst)), num_nodes=self.g.num_nodes())
        return homo, torch.cat(rel)

    def per_ntype(self, nids):
        return self.gpb.map_to_per_ntype(nids)

    def embedding(self, ntype, dim, init):
        import dgl
        return dgl.distributed.DistEmbedding(self.g.num_nodes(ntype), dim, "emb_" + ntype, init,
                                             self.g.get_node_partition_policy(ntype))

    def keys(self, ntype):
        return list(self.data[ntype].keys())

    def sparse_optimizer(self, embs, lr):
        import dgl
        return dgl.distributed.optim.SparseAdam(embs, lr=lr)

    def sum_over_ranks(self, values, op="sum"):
        t = torch.tensor(values, dtype=torch.float64)
        torch.distributed.all_reduce(
            t, op=torch.distributed.ReduceOp.MAX if op == "max" else torch.distributed.ReduceOp.SUM)
        return t.tolist()

    def barrier(self):
        self.g.barrier()


def init_emb(shape, dtype):
    # entity_classify_dist.py's init_emb: uniform(-1, 1).
    arr = torch.zeros(shape, dtype=dtype)
    torch.nn.init.uniform_(arr, -1.0, 1.0)
    return arr


def train(argv):
    import dgl
    from dgl.nn import RelGraphConv
    ap = argparse.ArgumentParser(prog="dgl_rgcn_peer.py train")
    ap.add_argument("--dataset", help="OGB raw folder: standalone, in memory")
    ap.add_argument("--part_config", help="DGL partition config: distributed")
    ap.add_argument("--ip_config")
    ap.add_argument("--num_epochs", type=int, default=10)
    ap.add_argument("--num_hidden", type=int, default=64)
    ap.add_argument("--num_layers", type=int, default=2)
    ap.add_argument("--num_bases", type=int, default=2)
    ap.add_argument("--fan_out", default="25,10")
    ap.add_argument("--batch_size", type=int, default=1024)
    ap.add_argument("--batch_size_eval", type=int, default=1024)
    ap.add_argument("--eval_every", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--sparse_lr", type=float, default=0.06)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--no_self_loop", action="store_true")
    ap.add_argument("--num_omp_threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--presorted", type=int, default=1,
                    help="sort each block's edges by relation for RelGraphConv(presorted=True)")
    ap.add_argument("--max_steps", type=int, default=0, help="stop each epoch after N steps (0 = all)")
    a = ap.parse_args(argv)
    if bool(a.dataset) == bool(a.part_config):
        sys.exit("dgl_rgcn_peer.py train: give --dataset (standalone) or --part_config (distributed)")
    if a.num_omp_threads > 0:
        torch.set_num_threads(a.num_omp_threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    dgl.seed(a.seed)
    t_load = time.time()
    src = Standalone(a) if a.dataset else Distributed(a)
    t_load = time.time() - t_load
    fanouts = [int(f) for f in a.fan_out.split(",")]
    if len(fanouts) != a.num_layers:
        sys.exit("--fan_out needs one entry per layer")
    R = len(src.etypes)
    target_id = src.ntypes.index(src.target)

    def sample_blocks(seeds):
        # The example's NeighborSampler.sample_blocks, per relation.
        seeds = torch.as_tensor(np.asarray(seeds), dtype=torch.int64)
        cur = src.to_homo(seeds)
        blocks = []
        for fanout in reversed(fanouts):  # DGL order: the seeds' hop is the last
            frontier, et = src.sample(cur, fanout)  # et: each edge's relation
            block = dgl.to_block(frontier, cur)  # (keeps the frontier's edge order)
            cur = block.srcdata[dgl.NID]
            if a.presorted:
                # Edges grouped by relation: RelGraphConv(presorted=True) then
                # multiplies each relation's run by its weight (segment_mm)
                # instead of gathering a weight per edge (gather_mm).
                et, perm = torch.sort(et, stable=True)
                u, v = block.edges()
                block = dgl.create_block((u[perm], v[perm]), num_src_nodes=block.num_src_nodes(),
                                         num_dst_nodes=block.num_dst_nodes())
            block.edata[dgl.ETYPE] = et
            # RGCN's c_{i,r}: the sampled in-edges of relation r into node i.
            _, v = block.edges()
            _, inv, cnt = torch.unique(v * R + et, return_inverse=True, return_counts=True)
            block.edata["norm"] = (1.0 / cnt[inv].float()).unsqueeze(1)
            blocks.insert(0, block)
        ntype, tid = src.per_ntype(cur)
        return seeds, blocks, ntype, tid

    class EmbedLayer(torch.nn.Module):
        # DistEmbedLayer: projections for featured types (dense), sparse
        # embeddings for the others (outside the module's parameters).
        def __init__(self):
            super().__init__()
            self.projs = torch.nn.ModuleDict()
            self.embeds = {}
            for t in src.ntypes:
                if "feat" in src.keys(t):
                    lin = torch.nn.Linear(src.data[t]["feat"].shape[1], a.num_hidden)
                    torch.nn.init.xavier_uniform_(lin.weight)
                    self.projs[t] = lin
                else:
                    self.embeds[t] = src.embedding(t, a.num_hidden, init_emb)

        def forward(self, ntype, tid):
            out = torch.empty(len(tid), a.num_hidden)
            for i in torch.unique(ntype).tolist():
                t = src.ntypes[i]
                loc = ntype == i
                if t in self.projs:
                    out[loc] = self.projs[t](src.data[t]["feat"][tid[loc]])
                else:
                    out[loc] = self.embeds[t](tid[loc])
            return out

    class EntityClassify(torch.nn.Module):
        def __init__(self):
            super().__init__()
            classes = int(src.labels[torch.arange(src.labels.shape[0])].max()) + 1
            dims = [a.num_hidden] * a.num_layers + [classes]
            self.layers = torch.nn.ModuleList([
                RelGraphConv(dims[i], dims[i + 1], R, "basis", a.num_bases,
                             activation=F.relu if i + 1 < a.num_layers else None,
                             self_loop=not a.no_self_loop,
                             dropout=a.dropout if i + 1 < a.num_layers else 0.0)
                for i in range(a.num_layers)])

        def forward(self, blocks, h):
            for layer, block in zip(self.layers, blocks):
                h = layer(block, h, block.edata[dgl.ETYPE], block.edata["norm"],
                          presorted=a.presorted)
            return h

    embed = EmbedLayer()
    model = EntityClassify()
    dense = list(model.parameters()) + list(embed.projs.parameters())
    if src.world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
        embed = torch.nn.parallel.DistributedDataParallel(embed)
    emb_mod = embed.module if src.world > 1 else embed
    opt = torch.optim.Adam(dense, lr=a.lr)
    sparse_opt = src.sparse_optimizer(list(emb_mod.embeds.values()), a.sparse_lr)
    loader_cls = torch.utils.data.DataLoader if a.dataset else dgl.distributed.DistDataLoader
    loader = loader_cls(dataset=src.split["train_mask"], batch_size=a.batch_size,
                        collate_fn=sample_blocks, shuffle=True, drop_last=False)

    def accuracy(key):
        ids = src.split[key]
        correct = 0
        model.eval()
        embed.eval()
        with torch.no_grad():
            for i in range(0, len(ids), a.batch_size_eval):
                seeds, blocks, ntype, tid = sample_blocks(ids[i:i + a.batch_size_eval])
                out = model(blocks, embed(ntype, tid))
                correct += int((out.argmax(1) == src.labels[seeds].long()).sum())
        model.train()
        embed.train()
        c, n = src.sum_over_ranks([float(correct), float(len(ids))])
        return c / max(n, 1.0)

    total_seeds, total_time, best_val, test_at_best, epochs = 0, 0.0, -1.0, 0.0, []
    for epoch in range(a.num_epochs):
        start, seeds_n, steps = time.time(), 0, 0
        for seeds, blocks, ntype, tid in loader:
            logits = model(blocks, embed(ntype, tid))
            loss = F.cross_entropy(logits, src.labels[seeds].long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            sparse_opt.step()
            seeds_n += len(seeds)
            steps += 1
            if a.max_steps and steps >= a.max_steps:
                break
        took = time.time() - start
        total_time += took
        total_seeds += seeds_n
        epochs.append(took)
        print("Part %d | Epoch %d | %.4f s | %d steps | %d seeds | loss %.4f"
              % (src.rank, epoch + 1, took, steps, seeds_n, loss.item()), file=sys.stderr, flush=True)
        if a.eval_every and ((epoch + 1) % a.eval_every == 0 or epoch + 1 == a.num_epochs):
            src.barrier()
            val, test = accuracy("val_mask"), accuracy("test_mask")
            print("Part %d | Epoch %d | val %.4f | test %.4f" % (src.rank, epoch + 1, val, test),
                  file=sys.stderr, flush=True)
            if val > best_val:
                best_val, test_at_best = val, test
    seeds_all = src.sum_over_ranks([float(total_seeds)])[0]
    slowest = src.sum_over_ranks([total_time], op="max")[0]
    if src.rank == 0:
        print(json.dumps({"system": "dgl", "ranks": src.world, "load_s": round(t_load, 2),
                          "mean_epoch_time_s": slowest / a.num_epochs,
                          "seeds_per_s": seeds_all / slowest, "val_acc": best_val,
                          "test_acc": test_at_best, "epoch_times_s": [round(e, 3) for e in epochs]}),
              flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[1] == "partition":
        partition(sys.argv[2], int(sys.argv[3]), sys.argv[4],
                  sys.argv[5] if len(sys.argv) > 5 else "metis")
    elif len(sys.argv) >= 2 and sys.argv[1] == "train":
        train(sys.argv[2:])
    else:
        sys.exit(__doc__)
