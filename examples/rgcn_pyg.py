"""PyG's R-GCN entity-classification example (torch_geometric's examples/rgcn.py), run by
hectorc-compiled kernels: the model, the 2-hop subgraph, the optimiser and the training loop are
PyG's, and the layers come from `hector.nn` instead of `torch_geometric.nn`.

    python examples/rgcn_pyg.py --dataset AIFB --data ../shared/data/aifb [--seeds 10]

The one other difference is where the data comes from: PyG's `Entities` downloads the dataset,
which needs a network; with `--data DIR` (the R-GCN layout: *_stripped.nt.gz, trainingSet.tsv /
completeDataset.tsv, testSet.tsv) the graph is read by `hector.data.load_entities` into the same
`Data` (edge_index, edge_type, train_idx, train_y, test_idx, test_y). Without `--data`, PyG's
`Entities(--root, --dataset)` is used.
"""
import argparse
import os.path as osp
import pathlib
import sys
import time

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "runtime" / "python"))
from hector.nn import FastRGCNConv, RGCNConv  # noqa: E402  (PyG: from torch_geometric.nn import)

parser = argparse.ArgumentParser()
parser.add_argument('--dataset', type=str, default='AIFB',
                    choices=['AIFB', 'MUTAG', 'BGS', 'AM'])
parser.add_argument('--data', type=str, default=None)
parser.add_argument('--root', type=str, default=osp.join('data', 'Entities'))
parser.add_argument('--seeds', type=int, default=1)
parser.add_argument('--epochs', type=int, default=50)
args = parser.parse_args()

if args.data:
    from hector.data import load_entities
    d = load_entities(args.data)
    data = Data(edge_index=torch.stack([d.src, d.dst]), edge_type=d.etype,
                train_idx=d.train_idx, train_y=d.train_y, test_idx=d.test_idx, test_y=d.test_y,
                num_nodes=d.num_nodes)
    num_relations, num_classes = d.num_relations, d.num_classes
else:
    from torch_geometric.datasets import Entities
    dataset = Entities(args.root, args.dataset)
    data = dataset[0]
    num_relations, num_classes = dataset.num_relations, dataset.num_classes

# BGS and AM graphs are too big to process them in a full-batch fashion.
# Since our model does only make use of a rather small receptive field, we
# filter the graph to only contain the nodes that are at most 2-hop neighbors
# away from any training/test node.
node_idx = torch.cat([data.train_idx, data.test_idx], dim=0)
node_idx, edge_index, mapping, edge_mask = k_hop_subgraph(
    node_idx, 2, data.edge_index, relabel_nodes=True, num_nodes=data.num_nodes)

data.num_nodes = node_idx.size(0)
data.edge_index = edge_index
data.edge_type = data.edge_type[edge_mask]
data.train_idx = mapping[:data.train_idx.size(0)]
data.test_idx = mapping[data.train_idx.size(0):]

Conv = FastRGCNConv if args.dataset == 'AM' else RGCNConv


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv(data.num_nodes, 16, num_relations, num_bases=30)
        self.conv2 = Conv(16, num_classes, num_relations, num_bases=30)

    def forward(self, edge_index, edge_type):
        x = F.relu(self.conv1(None, edge_index, edge_type))
        x = self.conv2(x, edge_index, edge_type)
        return F.log_softmax(x, dim=1)


device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
data = data.to(device)


def train(model, optimizer):
    model.train()
    optimizer.zero_grad()
    out = model(data.edge_index, data.edge_type)
    loss = F.nll_loss(out[data.train_idx], data.train_y)
    loss.backward()
    optimizer.step()
    return float(loss)


@torch.no_grad()
def test(model):
    model.eval()
    pred = model(data.edge_index, data.edge_type).argmax(dim=-1)
    train_acc = float((pred[data.train_idx] == data.train_y).float().mean())
    test_acc = float((pred[data.test_idx] == data.test_y).float().mean())
    return train_acc, test_acc


accs, times = [], []
for seed in range(args.seeds):
    torch.manual_seed(seed)
    model, data = Net().to(device), data.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0005)
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        loss = train(model, optimizer)
        train_acc, test_acc = test(model)
        times.append(time.time() - start)
        if args.seeds == 1:
            print(f'Epoch: {epoch:02d}, Loss: {loss:.4f}, Train: {train_acc:.4f} '
                  f'Test: {test_acc:.4f}')
    accs.append(test_acc)
    print(f'seed {seed}: test accuracy {100 * test_acc:.2f}%', flush=True)
accs = torch.tensor(accs)
print(f'test accuracy: {100 * accs.mean():.2f}% (mean over {args.seeds} seeds, std '
      f'{100 * (accs.std() if len(accs) > 1 else 0):.2f}), time per epoch: '
      f'{1000 * torch.tensor(times[1:] or times).median():.1f} ms')
