"""DGL on gnn's data, for bench/compare_dgl.sh (never run by CI).

  dgl_peer.py partition GNN_1PART_JSON NUM_PARTS OUT_DIR [metis|random] [self_loops]
      Rebuilds the graph from gnn's 1-partition arrays (the CSC of in-edges,
      features, labels, masks: byte for byte what gnn-train reads) and has
      DGL's own partition_graph split it (METIS balanced like gnn-partition
      --balance_train --balance_edges, or random). With self_loops, a
      self-loop on every node first (dgl.add_self_loop: the convention of
      DGL's GAT and GCN examples; gnn adds one to every block instead).
      A graph whose edges carry one number (gnn's 1-wide edge_feat.npy)
      gets it as edge data "w" (a self-loop added here weighs 1.0, as
      dgl.add_self_loop fills it).

  dgl_peer.py convert GNN_JSON OUT_DIR [self_loops]
      DGL's partition format (graph.dgl, node_feat.dgl, the JSON) from
      gnn-partition's output as it is: the same split, the same relabelled
      ids, the same bytes, with no partitioning by DGL. Each DGL partition
      holds its owned nodes first (ids in node_map's order), then the halo
      sources of their in-edges, and the in-edges of its owned nodes, all
      inner (what DGL's samplers read with DGL_GRAPH_FORMAT=csc). For graphs
      DGL's partition_graph cannot split in this machine's memory
      (synthetic:products: killed at 24 GiB); one partition is in memory
      at a time. With self_loops: a self-loop on every owned node instead
      of any it had (as the partition subcommand).

  dgl_peer.py train --part_config DGL_JSON [gnn-train's flags]
      (--task edge_class|edge_regression: the edge tasks on a converted
      partitioning with gnn's edge labels, see edge_task)
      DGL's distributed GraphSAGE recipe (examples/pytorch/graphsage/dist):
      mean SAGEConv, ReLU + dropout after every layer but the last, Adam,
      or with --model gat / gcn the model gnn-train's --model builds from
      DGL's GATConv (feat_drop, attn_drop, ELU, heads concatenated then
      averaged; --num_hidden the heads' total width) or GraphConv
      (norm='both', dropout before every layer but the first, ReLU),
      DistributedDataParallel, DistNodeDataLoader over force_even node_split,
      layer-wise full-neighbour inference. With edge data "w" and
      --edge_weight auto (the default; gnn-train's), gcn takes DGL's
      documented recipe (EdgeWeightNorm('both'), then GraphConv with
      norm='none' and those weights) and graphsage SAGEConv's edge_weight;
      each block's weights are pulled by edge id (g.edata["w"]).
      Standalone when DGL_DIST_MODE is
      standalone, otherwise with the DGL_* environment a launcher sets.
      Prints one JSON line last: mean epoch time and seeds/s over all ranks
      (every rank's seeds over the slowest rank's time), test accuracy
      after the last epoch (a multi-label graph's float label rows: BCE,
      and test_rocauc as OGB's proteins evaluator computes it). With --inference_only: no training, the
      layer-wise full-neighbour inference of every node timed (the slowest
      rank's), as {"inference_time_s": ...}.
"""
import argparse
import gc
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def partition(cfg_path, num_parts, out_dir, method, self_loops):
    import dgl
    folder = os.path.join(os.path.dirname(os.path.abspath(cfg_path)), "part0")
    arr = {n: np.load(os.path.join(folder, n + ".npy"))
           for n in ("indptr", "indices", "label", "train_mask", "valid_mask", "test_mask")}
    arr["feat"] = node_features(folder, json.load(open(cfg_path))["feature_dim"])
    n = arr["indptr"].shape[0] - 1
    # gnn's part0 is a CSC of in-edges: row v lists v's sources.
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(arr["indptr"]))
    g = dgl.graph((torch.from_numpy(arr["indices"]), torch.from_numpy(dst)), num_nodes=n)
    weights = edge_weights(folder)
    if weights is not None:
        g.edata["w"] = torch.from_numpy(weights)
    if self_loops:
        g = dgl.add_self_loop(dgl.remove_self_loop(g))
    g.ndata["features"] = torch.from_numpy(arr["feat"])
    g.ndata["labels"] = torch.from_numpy(arr["label"])
    g.ndata["train_mask"] = torch.from_numpy(arr["train_mask"].astype(bool))
    g.ndata["val_mask"] = torch.from_numpy(arr["valid_mask"].astype(bool))
    g.ndata["test_mask"] = torch.from_numpy(arr["test_mask"].astype(bool))
    num_edges = int(arr["indices"].shape[0])
    del arr, dst  # DGL holds its own copies; a products-size partitioning needs the memory
    gc.collect()
    name = json.load(open(cfg_path))["graph_name"]
    start = time.time()
    dgl.distributed.partition_graph(g, name, num_parts, out_dir, part_method=method,
                                    balance_ntypes=g.ndata["train_mask"], balance_edges=True)
    print(json.dumps({"dgl_partition_s": round(time.time() - start, 2), "nodes": n,
                      "edges": num_edges}))


def node_features(folder, feature_dim):
    """gnn's node features of a partition folder as a dense float32 array:
    feat.npy, or the CSR files of a sparse-feature partition (DGL stores
    features dense)."""
    path = os.path.join(folder, "feat.npy")
    if os.path.exists(path):
        return np.load(path)
    indptr = np.load(os.path.join(folder, "feat_indptr.npy"))
    indices = np.load(os.path.join(folder, "feat_indices.npy"))
    values_path = os.path.join(folder, "feat_values.npy")
    values = np.load(values_path) if os.path.exists(values_path) else None
    n = indptr.shape[0] - 1
    out = np.zeros((n, feature_dim), dtype=np.float32)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    out[rows, indices] = 1.0 if values is None else values
    return out


def edge_weights(folder):
    """gnn's 1-wide edge data of a partition folder (float32 [E], aligned with
    its in-edges), or None."""
    path = os.path.join(folder, "edge_feat.npy")
    if not os.path.exists(path):
        return None
    rows = np.load(path)
    return np.ascontiguousarray(rows[:, 0]) if rows.ndim == 2 and rows.shape[1] == 1 else None


def convert(cfg_path, out_dir, self_loops):
    import dgl
    import shutil
    start = time.time()
    if os.path.exists(out_dir):
        sys.exit("dgl_peer.py convert: %s exists: remove it first" % out_dir)
    try:
        cfg = json.load(open(cfg_path))
    except (OSError, ValueError) as e:
        sys.exit("dgl_peer.py convert: cannot read the partition config %s: %s" % (cfg_path, e))
    # Written beside out_dir and renamed when whole: compare_dgl.sh reuses
    # an out_dir that exists, so a cut-off run must not leave one.
    final_dir, out_dir = out_dir, out_dir.rstrip("/") + ".tmp"
    shutil.rmtree(out_dir, ignore_errors=True)
    base = os.path.dirname(os.path.abspath(cfg_path))
    num_parts = cfg["num_parts"]
    ranges = cfg["node_map"]["_N"]
    bounds = np.array([r[1] for r in ranges], dtype=np.int64)

    def load(p, name):
        return np.load(os.path.join(base, cfg["part-%d" % p]["part_dir"], name + ".npy"), mmap_mode="r")

    def in_edges(p):  # (src global, dst local, weight or None) of p's owned nodes' in-edges
        indptr, indices = load(p, "indptr"), load(p, "indices")
        lo = ranges[p][0]
        dst = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        src = np.asarray(indices, dtype=np.int64)
        w = edge_weights(os.path.join(base, cfg["part-%d" % p]["part_dir"]))
        if self_loops:
            keep = src != dst + lo
            owned = np.arange(len(indptr) - 1, dtype=np.int64)
            src = np.concatenate([src[keep], owned + lo])
            dst = np.concatenate([dst[keep], owned])
            if w is not None:
                w = np.concatenate([w[keep], np.ones(len(owned), dtype=np.float32)])
        return src, dst, w

    counts = [len(in_edges(p)[0]) if self_loops else int(cfg["part-%d" % p]["num_edges"])
              for p in range(num_parts)]
    edge_lo = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    labelled = None
    if "edge_labels" in cfg:
        if self_loops:
            sys.exit("dgl_peer.py convert: edge labels with self_loops: the edge ids would move")
        labelled = reverse_edge_ids(num_parts, lambda p: load(p, "orig_eids"))

    def edge_label_data(p, rev):
        # gnn's edge labels as DGL edge data by global edge id: the label, a
        # mask per split (each labelled input edge once: the stored in-edge
        # that runs as the input lists it) and each edge's reverse (for
        # exclude='reverse_id').
        split = np.array(load(p, "edge_split"))
        return {"_N:_E:_N/label": torch.from_numpy(np.array(load(p, "edge_label"))),
                "_N:_E:_N/train_mask": torch.from_numpy((split == 1).astype(np.uint8)),
                "_N:_E:_N/val_mask": torch.from_numpy((split == 2).astype(np.uint8)),
                "_N:_E:_N/test_mask": torch.from_numpy((split == 3).astype(np.uint8)),
                "_N:_E:_N/rev": torch.from_numpy(rev[edge_lo[p]:edge_lo[p + 1]])}
    os.makedirs(out_dir, exist_ok=True)
    out = {"graph_name": cfg["graph_name"], "num_nodes": cfg["num_nodes"],
           "num_edges": int(edge_lo[-1]), "part_method": cfg["part_method"],
           "num_parts": num_parts, "halo_hops": 1, "node_map": {"_N": ranges},
           "edge_map": {"_N:_E:_N": [[int(edge_lo[p]), int(edge_lo[p + 1])]
                                      for p in range(num_parts)]},
           "ntypes": {"_N": 0}, "etypes": {"_N:_E:_N": 0}}
    for p in range(num_parts):
        lo, hi = ranges[p]
        n_owned = hi - lo
        src, dst, w = in_edges(p)
        foreign = (src < lo) | (src >= hi)
        halo = np.unique(src[foreign])
        local_src = src - lo
        local_src[foreign] = n_owned + np.searchsorted(halo, src[foreign])
        nid = np.concatenate([np.arange(lo, hi, dtype=np.int64), halo])
        g = dgl.graph((torch.from_numpy(local_src), torch.from_numpy(dst)),
                      num_nodes=len(nid))
        del src, local_src, dst, foreign
        g.ndata[dgl.NID] = torch.from_numpy(nid)
        g.ndata["inner_node"] = torch.from_numpy((np.arange(len(nid)) < n_owned).astype(np.uint8))
        g.ndata["part_id"] = torch.from_numpy(np.searchsorted(bounds, nid, side="right"))
        g.edata[dgl.EID] = torch.arange(edge_lo[p], edge_lo[p + 1], dtype=torch.int64)
        g.edata["inner_edge"] = torch.ones(g.num_edges(), dtype=torch.uint8)
        folder = os.path.join(out_dir, "part%d" % p)
        os.makedirs(folder, exist_ok=True)
        dgl.save_graphs(os.path.join(folder, "graph.dgl"), [g])
        del g, nid, halo
        feats = {"_N/features": torch.from_numpy(node_features(
                     os.path.join(base, cfg["part-%d" % p]["part_dir"]), cfg["feature_dim"])),
                 "_N/labels": torch.from_numpy(np.array(load(p, "label"))),
                 "_N/train_mask": torch.from_numpy(np.array(load(p, "train_mask"))),
                 "_N/val_mask": torch.from_numpy(np.array(load(p, "valid_mask"))),
                 "_N/test_mask": torch.from_numpy(np.array(load(p, "test_mask")))}
        dgl.data.utils.save_tensors(os.path.join(folder, "node_feat.dgl"), feats)
        edata = {} if w is None else {"_N:_E:_N/w": torch.from_numpy(w)}
        if labelled is not None:
            edata.update(edge_label_data(p, labelled))
        dgl.data.utils.save_tensors(os.path.join(folder, "edge_feat.dgl"), edata)
        del w
        del feats
        gc.collect()
        out["part-%d" % p] = {"node_feats": "part%d/node_feat.dgl" % p,
                              "edge_feats": "part%d/edge_feat.dgl" % p,
                              "part_graph": "part%d/graph.dgl" % p}
    with open(os.path.join(out_dir, cfg["graph_name"] + ".json"), "w") as f:
        json.dump(out, f, indent=1)
    os.rename(out_dir, final_dir)
    print(json.dumps({"dgl_convert_s": round(time.time() - start, 2), "parts": num_parts,
                      "nodes": cfg["num_nodes"], "edges": int(edge_lo[-1])}))


def reverse_edge_ids(num_parts, orig_eids_of):
    """Each stored edge's reverse by global edge id: the other stored edge
    of the same input edge (both directions of an undirected edge share its
    input id), or itself when there is none (a self-loop, a directed edge)."""
    eids = np.concatenate([np.asarray(orig_eids_of(p), dtype=np.int64) for p in range(num_parts)])
    order = np.argsort(eids, kind="stable")
    rev = np.arange(len(eids), dtype=np.int64)
    same = eids[order[1:]] == eids[order[:-1]]
    a, b = order[:-1][same], order[1:][same]
    rev[a], rev[b] = b, a
    return rev


def mean_rocauc(scores, labels):
    """OGB's ogbn-proteins evaluator: ROC-AUC per label (ties at their mean
    rank, as scikit-learn), averaged over labels with both classes."""
    aucs = []
    for c in range(labels.shape[1]):
        y = labels[:, c] > 0.5
        p, n = int(y.sum()), int(len(y) - y.sum())
        if p == 0 or n == 0:
            continue
        s = scores[:, c].astype(np.float64)
        order = np.argsort(s, kind="mergesort")
        ranks = np.empty(len(s))
        sorted_s = s[order]
        i = 0
        while i < len(s):
            j = i + 1
            while j < len(s) and sorted_s[j] == sorted_s[i]:
                j += 1
            ranks[order[i:j]] = (i + 1 + j) / 2.0
            i = j
        aucs.append((ranks[y].sum() - p * (p + 1) / 2) / (p * n))
    return float(np.mean(aucs)) if aucs else 0.0


def train(argv):
    import dgl
    import dgl.nn.pytorch as dglnn
    ap = argparse.ArgumentParser(prog="dgl_peer.py train")
    ap.add_argument("--part_config", required=True)
    ap.add_argument("--ip_config", required=True)
    ap.add_argument("--num_epochs", type=int, default=20)
    ap.add_argument("--num_hidden", type=int, default=16)
    ap.add_argument("--num_layers", type=int, default=2)
    ap.add_argument("--fan_out", default="10,25")
    ap.add_argument("--batch_size", type=int, default=1000)
    ap.add_argument("--batch_size_eval", type=int, default=100000)
    ap.add_argument("--eval_every", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--weight_decay", type=float, default=0.0)
    ap.add_argument("--num_omp_threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="graphsage", choices=("graphsage", "gat", "gcn"))
    ap.add_argument("--num_heads", type=int, default=8)
    ap.add_argument("--num_out_heads", type=int, default=1)
    ap.add_argument("--attn_drop", type=float, default=0.6)
    ap.add_argument("--negative_slope", type=float, default=0.2)
    ap.add_argument("--edge_weight", default="auto", choices=("auto", "none"))
    ap.add_argument("--task", default="node", choices=("node", "edge_class", "edge_regression"))
    ap.add_argument("--exclude_target_edges", default="true", choices=("true", "false"),
                    help="edge tasks: keep each batch's edges and their reverses out of its "
                         "blocks (gnn-train's flag and default)")
    ap.add_argument("--inference_only", action="store_true",
                    help="no training: time the layer-wise full-neighbour inference of every "
                         "node (the model as initialised) and print {inference_time_s}")
    a = ap.parse_args(argv)
    if a.num_omp_threads > 0:
        torch.set_num_threads(a.num_omp_threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    dgl.seed(a.seed)

    dgl.distributed.initialize(a.ip_config)
    torch.distributed.init_process_group("gloo")
    name = json.load(open(a.part_config))["graph_name"]
    g = dgl.distributed.DistGraph(name, part_config=a.part_config)
    book = g.get_partition_book()
    feats, labels = g.ndata["features"], g.ndata["labels"]
    split = {m: dgl.distributed.node_split(g.ndata[m], book, force_even=True)
             for m in ("train_mask", "val_mask", "test_mask")}
    # gnn's multi-label partitions hold float32 label rows [N, L] of 0/1
    # (ogbn-proteins' shape): BCE on the logits, OGB's proteins evaluator.
    multilabel = len(labels.shape) == 2
    classes = labels.shape[1] if multilabel else int(labels[np.arange(g.num_nodes())].max()) + 1
    dims = [feats.shape[1]] + [a.num_hidden] * (a.num_layers - 1) + [classes]
    if a.task != "node":
        # Edge tasks: the model's rows are num_hidden-wide node embeddings.
        dims[-1] = a.num_hidden
    weighted = (a.edge_weight == "auto" and a.model in ("gcn", "graphsage")
                and "w" in g.edata.keys())
    edge_w = g.edata["w"] if weighted else None
    if weighted and g.rank() == 0:
        print("dgl_peer: %s weighs messages by the edge data 'w'" % a.model, file=sys.stderr)
    norm_both = dglnn.EdgeWeightNorm(norm="both")

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            mods = []
            for i in range(a.num_layers):
                last = i + 1 == a.num_layers
                if a.model == "graphsage":
                    mods.append(dglnn.SAGEConv(dims[i], dims[i + 1], "mean"))
                elif a.model == "gcn":
                    mods.append(dglnn.GraphConv(dims[i], dims[i + 1],
                                                norm="none" if weighted else "both",
                                                activation=None if last else F.relu,
                                                allow_zero_in_degree=True))
                else:
                    heads = a.num_out_heads if last else a.num_heads
                    mods.append(dglnn.GATConv(
                        dims[i], dims[i + 1] if last else dims[i + 1] // heads, heads,
                        feat_drop=a.dropout, attn_drop=a.attn_drop,
                        negative_slope=a.negative_slope, activation=None if last else F.elu,
                        allow_zero_in_degree=True))
            self.layers = torch.nn.ModuleList(mods)
            self.dropout = torch.nn.Dropout(a.dropout)

        def layer(self, i, block, h):
            last = i + 1 == len(self.layers)
            if a.model == "gcn" and i > 0 and not isinstance(h, tuple):  # (inference: none)
                h = self.dropout(h)
            if weighted:
                w = edge_w[block.edata[dgl.EID]]
                if a.model == "gcn":
                    w = norm_both(block, w)
                h = self.layers[i](block, h, edge_weight=w)
            else:
                h = self.layers[i](block, h)
            if a.model == "gat":
                return h.mean(1) if last else h.flatten(1)
            if a.model == "graphsage" and not last:
                return self.dropout(F.relu(h))
            return h

        def forward(self, blocks, h):
            for i, block in enumerate(blocks):
                h = self.layer(i, block, h)
            return h

        def full_inference(self, x):
            nodes = dgl.distributed.node_split(torch.ones(g.num_nodes(), dtype=torch.bool), book,
                                                 force_even=True)
            for i, layer in enumerate(self.layers):
                last = i + 1 == len(self.layers)
                y = dgl.distributed.DistTensor((g.num_nodes(), dims[i + 1]), torch.float32,
                                               "infer_%d" % i, persistent=True)
                loader = dgl.dataloading.DistNodeDataLoader(
                    g, nodes, dgl.dataloading.NeighborSampler([-1]),
                    batch_size=a.batch_size_eval, shuffle=False)
                for inputs, outputs, blocks in loader:
                    h = x[inputs]
                    y[outputs] = self.layer(i, blocks[0], (h, h[:blocks[0].num_dst_nodes()]))
                x = y
                g.barrier()
            return x

    if a.task != "node":
        edge_task(a, g, book, feats, Sage())
        return
    model = torch.nn.parallel.DistributedDataParallel(Sage())
    if a.inference_only:
        model.eval()
        g.barrier()
        start = time.time()
        with torch.no_grad():
            pred = model.module.full_inference(feats)
        took = time.time() - start
        slowest = torch.tensor([took], dtype=torch.float64)
        torch.distributed.all_reduce(slowest, op=torch.distributed.ReduceOp.MAX)
        if g.rank() == 0:
            print(json.dumps({"system": "dgl", "ranks": torch.distributed.get_world_size(),
                              "inference_time_s": float(slowest[0]),
                              "nodes": int(g.num_nodes()), "out_dim": int(pred.shape[1])}),
                  flush=True)
        return
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    sampler = dgl.dataloading.NeighborSampler([int(f) for f in a.fan_out.split(",")])
    loader = dgl.dataloading.DistNodeDataLoader(g, split["train_mask"], sampler,
                                                batch_size=a.batch_size, shuffle=True)
    total_seeds, total_time, test_acc = 0, 0.0, 0.0
    for epoch in range(a.num_epochs):
        start, seeds = time.time(), 0
        with model.join():
            for inputs, outputs, blocks in loader:
                out = model(blocks, feats[inputs])
                if multilabel:
                    loss = F.binary_cross_entropy_with_logits(out, labels[outputs].float())
                else:
                    loss = F.cross_entropy(out, labels[outputs].long())
                opt.zero_grad()
                loss.backward()
                opt.step()
                seeds += len(outputs)
        took = time.time() - start
        total_time += took
        total_seeds += seeds
        print("Part %d | Epoch %d | %.4f s | %d seeds | loss %.4f"
              % (g.rank(), epoch + 1, took, seeds, loss.item()), file=sys.stderr, flush=True)
        if (epoch + 1) % a.eval_every == 0 or epoch + 1 == a.num_epochs:
            model.eval()
            with torch.no_grad():
                pred = model.module.full_inference(feats)
            model.train()
            ids = split["test_mask"]
            if multilabel:
                # Every rank's test rows to every rank: ROC-AUC is not a sum.
                mine = (pred[ids].numpy(), labels[ids].numpy())
                every = [None] * torch.distributed.get_world_size()
                torch.distributed.all_gather_object(every, mine)
                test_acc = mean_rocauc(np.concatenate([e[0] for e in every]),
                                       np.concatenate([e[1] for e in every]))
            else:
                test_acc = float((pred[ids].argmax(1) == labels[ids].long()).float().mean())
    # Every rank's seeds over the slowest rank's training time; test accuracy
    # weighted by each rank's share of the test nodes (ROC-AUC: every rank
    # already has the whole figure).
    n_test = len(split["test_mask"])
    if multilabel:
        n_test = 1.0 / torch.distributed.get_world_size()
    sums = torch.tensor([float(total_seeds), test_acc * n_test, float(n_test)], dtype=torch.float64)
    slowest = torch.tensor([total_time], dtype=torch.float64)
    torch.distributed.all_reduce(sums)
    torch.distributed.all_reduce(slowest, op=torch.distributed.ReduceOp.MAX)
    if g.rank() == 0:
        print(json.dumps({"system": "dgl", "ranks": torch.distributed.get_world_size(),
                          "mean_epoch_time_s": float(slowest[0]) / a.num_epochs,
                          "seeds_per_s": float(sums[0] / slowest[0]),
                          "test_rocauc" if multilabel else "test_acc": float(sums[1] / sums[2])}),
              flush=True)


def edge_task(a, g, book, feats, gnn):
    """Edge classification or regression as DGL's docs do it: a
    DistEdgeDataLoader over force_even edge_split of the train edges, each
    batch's edges and their reverses excluded from its blocks
    (exclude='reverse_id' with each edge's reverse id; with
    --exclude_target_edges false, none), the GNN's embeddings of both ends
    through an MLP decoder (Linear(2h, h), ReLU, Linear(h, C)),
    cross-entropy or MSE; evaluation decodes every test edge from
    layer-wise full-neighbour embeddings.

    DGL 2.1's DistGraph.sample_neighbors takes exclude_edges and drops it
    (the argument is unused there: dmlc/dgl#7225, mended in DGL 2.3), so
    DistEdgeDataLoader(exclude=...) alone samples the batch's own edges on
    a DistGraph, standalone or not. ExcludingSampler does what DGL's
    sampler does on a local graph instead: it draws each layer's
    neighbours, then removes the excluded edges from the draw (DGL's C++
    ExcludeCertainEdges, after sampling)."""
    import dgl
    classes = a.task == "edge_class"
    labels = g.edata["label"]
    split = {m: dgl.distributed.edge_split(g.edata[m], book, force_even=True)
             for m in ("train_mask", "val_mask", "test_mask")}
    rev = g.edata["rev"][torch.arange(g.num_edges())]
    out = int(labels[torch.arange(g.num_edges())].max()) + 1 if classes else 1
    h = a.num_hidden

    class EdgeModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gnn = gnn
            self.decoder = torch.nn.Sequential(torch.nn.Linear(2 * h, h), torch.nn.ReLU(),
                                               torch.nn.Linear(h, out))

        def forward(self, blocks, x, u, v):
            emb = self.gnn(blocks, x)
            return self.decoder(torch.cat([emb[u], emb[v]], 1))

    model = torch.nn.parallel.DistributedDataParallel(EdgeModel())
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    # One flag per edge id, set for a batch's excluded edges while its
    # blocks are drawn: a lookup per sampled edge (np.isin sorted the
    # draw, a fifth of DGL's batch time).
    excluded = np.zeros(g.num_edges(), dtype=bool)
    filter_s = [0.0]  # time spent removing them (stderr at the end)

    class ExcludingSampler(dgl.dataloading.NeighborSampler):
        def sample_blocks(self, g, seed_nodes, exclude_eids=None):
            output_nodes, blocks = seed_nodes, []
            drop = None if exclude_eids is None else exclude_eids.numpy()
            if drop is not None:
                excluded[drop] = True
            for fanout in reversed(self.fanouts):
                frontier = g.sample_neighbors(seed_nodes, fanout, replace=self.replace)
                if drop is not None:
                    t0 = time.perf_counter()
                    gone = excluded[frontier.edata[dgl.EID].numpy()].nonzero()[0]
                    if len(gone):
                        frontier = dgl.remove_edges(frontier, torch.from_numpy(gone))
                    filter_s[0] += time.perf_counter() - t0
                block = dgl.to_block(frontier, seed_nodes)
                block.edata[dgl.EID] = frontier.edata[dgl.EID]
                seed_nodes = block.srcdata[dgl.NID]
                blocks.insert(0, block)
            if drop is not None:
                excluded[drop] = False
            return seed_nodes, output_nodes, blocks

    fanouts = [int(f) for f in a.fan_out.split(",")]
    if a.exclude_target_edges == "true":
        loader = dgl.dataloading.DistEdgeDataLoader(g, split["train_mask"],
                                                    ExcludingSampler(fanouts),
                                                    exclude="reverse_id", reverse_eids=rev,
                                                    batch_size=a.batch_size, shuffle=True)
    else:
        loader = dgl.dataloading.DistEdgeDataLoader(g, split["train_mask"],
                                                    dgl.dataloading.NeighborSampler(fanouts),
                                                    batch_size=a.batch_size, shuffle=True)
    total_edges, total_time, figure = 0, 0.0, 0.0
    for epoch in range(a.num_epochs):
        start, edges = time.time(), 0
        with model.join():
            for inputs, pair, blocks in loader:
                u, v = pair.edges()
                y = model(blocks, feats[inputs], u, v)
                truth = labels[pair.edata[dgl.EID]]
                if classes:
                    loss = F.cross_entropy(y, truth.long())
                else:
                    loss = F.mse_loss(y.squeeze(1), truth.float())
                opt.zero_grad()
                loss.backward()
                opt.step()
                edges += pair.num_edges()
        took = time.time() - start
        total_time += took
        total_edges += edges
        print("Part %d | Epoch %d | %.4f s | %d edges | loss %.4f"
              % (g.rank(), epoch + 1, took, edges, loss.item()), file=sys.stderr, flush=True)
    if a.exclude_target_edges == "true":
        print("Part %d | removing excluded edges from the draws: %.3f s of %.3f s of training"
              % (g.rank(), filter_s[0], total_time), file=sys.stderr, flush=True)
    model.eval()
    with torch.no_grad():
        emb = gnn.full_inference(feats)
        ids = split["test_mask"]
        u, v = g.find_edges(ids)
        y = model.module.decoder(torch.cat([emb[u], emb[v]], 1))
        truth = labels[ids]
        if classes:
            score = float((y.argmax(1) == truth.long()).float().sum())
        else:
            score = float(((y.squeeze(1) - truth.float()) ** 2).sum())
    sums = torch.tensor([float(total_edges), score, float(len(ids))], dtype=torch.float64)
    slowest = torch.tensor([total_time], dtype=torch.float64)
    torch.distributed.all_reduce(sums)
    torch.distributed.all_reduce(slowest, op=torch.distributed.ReduceOp.MAX)
    if g.rank() == 0:
        figure = float(sums[1] / sums[2]) if classes else float((sums[1] / sums[2]) ** 0.5)
        print(json.dumps({"system": "dgl", "ranks": torch.distributed.get_world_size(),
                          "mean_epoch_time_s": float(slowest[0]) / a.num_epochs,
                          "seeds_per_s": float(sums[0] / slowest[0]),
                          "test_acc" if classes else "test_rmse": figure}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "partition":
        partition(sys.argv[2], int(sys.argv[3]), sys.argv[4],
                  sys.argv[5] if len(sys.argv) > 5 else "metis",
                  len(sys.argv) > 6 and sys.argv[6] == "self_loops")
    elif len(sys.argv) >= 4 and sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "self_loops")
    elif len(sys.argv) >= 2 and sys.argv[1] == "train":
        train(sys.argv[2:])
    else:
        sys.exit(__doc__)
